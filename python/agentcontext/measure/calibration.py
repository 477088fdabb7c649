"""Token estimates calibrated online from the provider's reported usage, per model and content
class.

The exact encodings (``o200k_base``, ``cl100k_base``) are OpenAI's; Anthropic's and other
providers' tokenizers differ, by a factor that depends on what the text is (code, JSON, prose,
CJK). Every response reports how many input tokens the request really had; :class:`Calibration`
fits, per model, one multiplier per content class so that

    reported input tokens ≈ Σ_class factor[class] * estimate[class]

by least squares over the responses seen so far, shrunk toward 1.0 (no evidence: no change), so
estimates converge on the provider's tokenizer. It is saved and loaded as JSON.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentcontext import _checks
from agentcontext._core import Conversation
from agentcontext.errors import OptionError, TranscriptReadError
from agentcontext.types import CalibrationDict, Encoding

__all__ = ["CLASSES", "Calibration", "class_tokens"]

#: The content classes, in a fixed order.
CLASSES: tuple[str, ...] = ("prose", "code", "json", "cjk", "overhead")


def class_tokens(conversation: Conversation, *, encoding: Encoding | None = None, start: int = 0) -> dict[str, int]:
    """Estimated tokens of ``conversation`` (from message ``start`` on) per content class, with
    the per-message and per-block overhead as its own ``overhead`` class. ``encoding`` (default:
    the conversation's) is what the estimates are in. The core classifies each message once and
    keeps its counts (see :meth:`agentcontext.Conversation.class_tokens`)."""
    return conversation.class_tokens(start, encoding=encoding or None)


@dataclass
class _Fit:
    """Normal equations of one model's least-squares fit (ridge toward factor 1.0)."""

    xtx: list[list[float]] = field(default_factory=lambda: [[0.0] * len(CLASSES) for _ in CLASSES])
    xty: list[float] = field(default_factory=lambda: [0.0] * len(CLASSES))
    observations: int = 0
    factors: list[float] = field(default_factory=lambda: [1.0] * len(CLASSES))


def _solve(a: list[list[float]], b: list[float]) -> list[float] | None:
    """Gaussian elimination with partial pivoting; None when singular."""
    n = len(b)
    m = [[*row, rhs] for row, rhs in zip(a, b, strict=True)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(m[r][col]))
        if abs(m[pivot][col]) < 1e-12:
            return None
        m[col], m[pivot] = m[pivot], m[col]
        for r in range(n):
            if r != col:
                f = m[r][col] / m[col][col]
                m[r] = [x - f * y for x, y in zip(m[r], m[col], strict=True)]
    return [m[i][n] / m[i][i] for i in range(n)]


def _file_error(err: OSError, path: Path, verb: str) -> TranscriptReadError:
    """``err`` as a typed error naming the calibration file (not a temporary file beside it)."""
    shown = os.fspath(path)
    why = err.strerror or str(err)
    return TranscriptReadError(err.errno or 0, f"{shown}: cannot {verb} the calibration: {why}", shown)


class Calibration:
    """Per-model, per-class multipliers that turn local estimates into the provider's counts.

    ``prior`` is the weight of the "factor 1.0" prior, in tokens² (so a few large responses
    outweigh it; it only keeps a class with no evidence at 1.0). ``decay`` (0 < decay ≤ 1)
    discounts old observations, so a changed tokenizer is followed.
    """

    def __init__(self, *, encoding: Encoding = "o200k_base", prior: float = 1e6, decay: float = 1.0) -> None:
        _checks.number("decay", decay, high=1.0, low_open=True)
        _checks.number("prior", prior, low_open=True)
        self.encoding: Encoding = encoding
        self.prior = prior
        self.decay = decay
        self._fits: dict[str, _Fit] = {}

    # -- learning --------------------------------------------------------------------------

    def observe(self, model: str, estimates: Mapping[str, int] | Conversation, reported: int) -> None:
        """Learn from one response: ``estimates`` are the request's local estimates per class (or
        the request's conversation, classified here), ``reported`` the input tokens the provider
        reported for it."""
        _checks.count("reported", reported)
        x = self._vector(estimates)
        if not any(x):
            return
        fit = self._fits.setdefault(model, _Fit())
        d = self.decay
        for i in range(len(CLASSES)):
            fit.xty[i] = d * fit.xty[i] + x[i] * reported
            for j in range(len(CLASSES)):
                fit.xtx[i][j] = d * fit.xtx[i][j] + x[i] * x[j]
        fit.observations += 1
        # Ridge toward 1.0: minimize |X k - y|² + prior |k - 1|².
        a = [
            [fit.xtx[i][j] + (self.prior if i == j else 0.0) for j in range(len(CLASSES))] for i in range(len(CLASSES))
        ]
        b = [fit.xty[i] + self.prior for i in range(len(CLASSES))]
        solved = _solve(a, b)
        if solved is not None and all(math.isfinite(k) for k in solved):
            fit.factors = [min(4.0, max(0.25, k)) for k in solved]

    def _vector(self, estimates: Mapping[str, int] | Conversation) -> list[float]:
        if isinstance(estimates, Conversation):
            estimates = class_tokens(estimates, encoding=self.encoding)
        unknown = set(estimates) - set(CLASSES)
        if unknown:
            raise OptionError(f"unknown content classes {sorted(unknown)} (expected {', '.join(CLASSES)})")
        return [float(estimates.get(c, 0)) for c in CLASSES]

    # -- using -----------------------------------------------------------------------------

    def factors(self, model: str) -> dict[str, float]:
        """The current multiplier per class for ``model`` (all 1.0 before any observation)."""
        fit = self._fits.get(model)
        return dict(zip(CLASSES, fit.factors if fit else [1.0] * len(CLASSES), strict=True))

    def observations(self, model: str) -> int:
        fit = self._fits.get(model)
        return fit.observations if fit else 0

    def estimate(self, model: str, estimates: Mapping[str, int] | Conversation) -> int:
        """The calibrated estimate of a request's input tokens for ``model``."""
        x = self._vector(estimates)
        k = self.factors(model)
        return round(sum(k[c] * v for c, v in zip(CLASSES, x, strict=True)))

    def ratio(self, model: str, conversation: Conversation) -> float:
        """Calibrated / local tokens of ``conversation`` (1.0 before any observation)."""
        local = conversation.tokens
        return self.estimate(model, conversation) / local if local else 1.0

    # -- persistence -----------------------------------------------------------------------

    def to_dict(self) -> CalibrationDict:
        return {
            "version": 1,
            "encoding": self.encoding,
            "prior": self.prior,
            "decay": self.decay,
            "classes": list(CLASSES),
            "models": {
                model: {"observations": f.observations, "factors": f.factors, "xtx": f.xtx, "xty": f.xty}
                for model, f in self._fits.items()
            },
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Calibration:
        """Rebuild a calibration saved by :meth:`to_dict`.

        Raises:
            OptionError: the data is not a saved calibration (or from another version).
        """
        try:
            if data.get("version") != 1 or list(data["classes"]) != list(CLASSES):
                raise OptionError(f"not a version-1 calibration with classes {CLASSES}")
            out = cls(encoding=data["encoding"], prior=float(data["prior"]), decay=float(data["decay"]))
            for model, f in data["models"].items():
                n = len(CLASSES)
                fit = _Fit(
                    xtx=[[float(v) for v in row] for row in f["xtx"]],
                    xty=[float(v) for v in f["xty"]],
                    observations=int(f["observations"]),
                    factors=[float(v) for v in f["factors"]],
                )
                if len(fit.xtx) != n or any(len(r) != n for r in fit.xtx) or len(fit.xty) != n or len(fit.factors) != n:
                    raise OptionError(f"calibration for {model!r} has the wrong shape")
                out._fits[str(model)] = fit
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise OptionError(f"not a saved calibration: {exc}") from exc
        return out

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the calibration as JSON, atomically (a crash never leaves a torn file).

        Raises:
            TranscriptReadError: the file cannot be written (an ``OSError`` naming ``path``).
        """
        target = Path(path)
        try:
            fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        except OSError as err:
            raise _file_error(err, target, "write") from err
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(self.to_dict(), f)
            os.replace(tmp, target)
        except BaseException as err:
            Path(tmp).unlink(missing_ok=True)
            if isinstance(err, OSError):
                raise _file_error(err, target, "write") from err
            raise

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Calibration:
        """Read a calibration written by :meth:`save`.

        Raises:
            OptionError: the file is not a saved calibration.
            TranscriptReadError: the file cannot be read (an ``OSError`` naming ``path``).
        """
        try:
            with open(path, encoding="utf-8") as f:
                try:
                    data = json.load(f)
                except json.JSONDecodeError as exc:
                    raise OptionError(f"{path}: not a saved calibration: {exc}") from exc
        except OSError as err:
            raise _file_error(err, Path(path), "read") from err
        if not isinstance(data, dict):
            raise OptionError(f"{path}: not a saved calibration")
        return cls.from_dict(data)

    def __repr__(self) -> str:
        models = ", ".join(f"{m}: {f.observations} obs" for m, f in self._fits.items())
        return f"Calibration(encoding={self.encoding!r}, models={{{models}}})"
