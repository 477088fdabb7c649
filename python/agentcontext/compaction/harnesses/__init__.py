"""The harnesses the presets are named after, one module per harness: each a
:class:`~agentcontext.compaction.harness.Harness` subclass holding its options and overriding the
hooks through which it changes the ladder; :mod:`agentcontext.compaction.presets` wires them in."""
