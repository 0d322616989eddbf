"""Just-in-time retrieval: before the first model call, attach the files a task points at, and only that.

    retrieval.py   `retrieve`: evidence per file, scored; what clears the bar is attached, the next few listed
    signals.py     what a task's text says about where to look (paths, frames, errors, names), unchecked
    attach.py      the one reader for named files: resolved inside the project, bounded, rendered

Internal (used only inside the package, may change without notice): `attach`, `signals`.

What other packages may use is re-exported here (`from swecli.retrieval import ...`); each name is imported
from its module the first time it is used, so importing the package costs nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from swecli.lazy import exports

if TYPE_CHECKING:
    from swecli.retrieval.retrieval import Attachment as Attachment
    from swecli.retrieval.retrieval import Retrieval as Retrieval
    from swecli.retrieval.retrieval import retrieve as retrieve

_EXPORTS = {
    "Attachment": "retrieval",
    "Retrieval": "retrieval",
    "retrieve": "retrieval",
}
__all__ = sorted(_EXPORTS)
__getattr__ = exports(__name__, _EXPORTS)
