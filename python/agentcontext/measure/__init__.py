"""Measuring what compaction keeps and costs, offline; and the provider's own token counts.

- :mod:`.metrics`: strategies evaluated on a conversation (fit, retention, cost; replays).
- :mod:`.probes`: the facts a compaction should keep, extracted from the raw messages.
- :mod:`.evaluation`: ``agentcontext eval`` over many transcripts, strategies and budgets.
- :mod:`.pricing`: price tables and cache-cost arithmetic (what a request costs; whether
  clearing pays, which the compaction ladder asks).
- :mod:`.calibration`: :class:`~agentcontext.Calibration`, token estimates fitted to the
  provider's reported usage.
- :mod:`.testing`: assertion helpers; :mod:`.pytest_plugin`: the ``agentcontext`` pytest plugin.
- :mod:`.display`: HTML views and context-size plots.

Nothing is imported here: loading the pytest plugin (or any one module) imports only what it uses.
"""
