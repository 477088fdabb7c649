"""The behaviours behind some presets' numbers, one module per harness (the compaction ladder
calls them where the policy asks for them; see :data:`agentcontext.compaction.PRESETS`)."""
