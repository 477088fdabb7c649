"""Sessions that survive the process and subagents that cannot flood their parent.

- :mod:`.snapshots`: :class:`SnapshotStore`, the exact state of a session saved atomically at the
  end of every outer turn (``Session(snapshots=...)``, ``Session.resume``, ``Session.clear``).
- :mod:`.permissions`: :class:`Permissions` and :class:`Rule`, which calls run, are refused or wait
  for the user (``Session(permissions=...)``, ``Session.answer``).
- :mod:`.state`: the control state a snapshot keeps and how a resumed session takes it back.
- :mod:`.subagents`: the ``agent`` tool (``Session(subagents=SubagentPolicy(...))``).
- :mod:`.cli`: ``agentcontext sessions list|show``.
"""

from agentcontext.sessions.permissions import PendingCall, PermissionRequest, Permissions, Rule
from agentcontext.sessions.snapshots import SNAPSHOT_VERSION, Snapshot, SnapshotInfo, SnapshotReason, SnapshotStore
from agentcontext.sessions.subagents import AGENT_TOOL, SubagentPolicy, SubagentResult, Subagents, workspace

__all__ = [
    "AGENT_TOOL",
    "SNAPSHOT_VERSION",
    "PendingCall",
    "PermissionRequest",
    "Permissions",
    "Rule",
    "Snapshot",
    "SnapshotInfo",
    "SnapshotReason",
    "SnapshotStore",
    "SubagentPolicy",
    "SubagentResult",
    "Subagents",
    "workspace",
]
