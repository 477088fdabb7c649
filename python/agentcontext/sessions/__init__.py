"""Sessions that survive the process: snapshots of a session's exact state (:mod:`.snapshots`)
and the ``agentcontext sessions`` commands (:mod:`.cli`)."""

from agentcontext.sessions.snapshots import SNAPSHOT_VERSION, Snapshot, SnapshotInfo, SnapshotReason, SnapshotStore

__all__ = ["SNAPSHOT_VERSION", "Snapshot", "SnapshotInfo", "SnapshotReason", "SnapshotStore"]
