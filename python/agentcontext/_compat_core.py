"""The compiled core's functions whose keywords were renamed, as the package exports them: the old
keyword still works for one release, with a DeprecationWarning (see :mod:`agentcontext._deprecation`)."""

from __future__ import annotations

from agentcontext import _core
from agentcontext._deprecation import renamed

__all__ = ["page_text", "read_page"]

read_page = renamed("read_page", limit="lines")(_core.read_page)
page_text = renamed("page_text", limit="lines")(_core.page_text)
