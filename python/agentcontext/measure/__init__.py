"""Measuring what compaction keeps and costs, offline; and the provider's own token counts.

- :mod:`.metrics`: strategies evaluated on a conversation (fit, retention, cost; replays).
- the probes it measures with are :mod:`agentcontext.probes` (the facts a compaction should keep, extracted from the raw messages; the compactor checks its summaries against them too).
- :mod:`.evaluation`: ``agentcontext eval`` over many transcripts, strategies and budgets.
- :mod:`.repeated`: a long session compacted again and again, against one compaction of it
  (``benches/quality.py`` reports both).
- :mod:`.calibration`: :class:`~agentcontext.Calibration`, token estimates fitted to the
  provider's reported usage.
- :mod:`.testing`: assertion helpers; :mod:`.pytest_plugin`: the ``agentcontext`` pytest plugin.

What lower layers use lives with them, so that this package only imports downwards: the prices
and whether clearing pays in :mod:`agentcontext.compaction.pricing` (the ladder asks), the cache
prefix and :class:`~agentcontext.compiler.prefix.Replay` in :mod:`agentcontext.compiler.prefix`
(the compiler measures its requests), the Jupyter views and plots in :mod:`agentcontext.display`.

Nothing is imported here: loading the pytest plugin (or any one module) imports only what it uses.
"""
