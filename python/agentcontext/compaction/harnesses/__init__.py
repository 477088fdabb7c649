"""Behaviours of the harnesses the presets are named after, one module per harness, called by
the compaction ladder (:mod:`agentcontext.compaction`) where a policy field turns them on."""
