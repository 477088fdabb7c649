"""Fit the weights of the token heuristic against exact counts, and report its error.

    python benches/calibrate_heuristic.py            # report the error of the shipped weights
    python benches/calibrate_heuristic.py --fit      # also fit new weights (needs numpy)

The fit is least squares on relative error (each text weighted by 1/exact) over every message
text and tool-call argument in the shared corpus, plus a small CJK sample so scripts the corpus
lacks are represented. Paste fitted weights into ``src/tokens/heuristic.rs``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import agentcontext as ac
from agentcontext import _core
from tests.support import message_texts, normalized_files

# A few CJK and mixed-script texts (written for this script) so the fit sees such scripts.
EXTRA_TEXTS = [
    "上下文窗口管理成为关键。文章分析了四个智能体运行框架如何应对上下文窗口限制。",
    "模型是个能力超强、但只能看桌面、而且记性只到桌面的专家。桌子就这么大。",
    "ファイルを読み込んで、テストを実行してください。エラーがあれば修正します。",
    "컨텍스트 창은 고정되어 있으며 모델은 그 안의 내용만 볼 수 있습니다.",
    "修复 src/app.py 中的 bug：函数 parse_args() 在参数为空时抛出 IndexError。",
    "Тест не прошёл: ожидалось 3, получено 4. Проверьте функцию сложения.",
]


def load(limit_chars: int = 20_000) -> list[tuple[str, str]]:
    texts = []
    for path in normalized_files():
        for kind, text in message_texts(path):
            if text.strip():
                texts.append((kind, text[:limit_chars]))
    texts += [("cjk", t * 4) for t in EXTRA_TEXTS]
    return texts


def errors(texts: list[tuple[str, str]], estimate, exact: list[int]) -> dict[str, tuple[float, float, int]]:
    by_kind: dict[str, list[float]] = {}
    for (kind, text), n in zip(texts, exact, strict=True):
        if n < 8:
            continue
        err = abs(estimate(text) - n) / n
        by_kind.setdefault(kind, []).append(err)
        by_kind.setdefault("all", []).append(err)
    out = {}
    for kind, errs in sorted(by_kind.items()):
        errs.sort()
        out[kind] = (statistics.median(errs), errs[int(0.9 * (len(errs) - 1))], len(errs))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fit", action="store_true", help="fit new weights (needs numpy)")
    args = parser.parse_args()
    texts = load()
    print(f"{len(texts)} texts from {len(normalized_files())} transcripts")
    for enc in ["o200k_base", "cl100k_base"]:
        exact = ac.count_tokens_batch([t for _, t in texts], encoding=enc)
        if args.fit:
            import numpy as np

            x = np.array(_core._heuristic_features([t for _, t in texts]), dtype=float)
            y = np.array(exact, dtype=float)
            w = 1.0 / np.maximum(y, 8.0)
            coef, *_ = np.linalg.lstsq(x * w[:, None], y * w, rcond=None)
            print(f"{enc} fitted weights: [{', '.join(f'{c:.4f}' for c in coef)}]")
        print(f"\n{enc}: per-text relative error of the heuristic (median, p90, n) vs len/4")
        heur = errors(texts, lambda t, e=enc: ac.estimate_tokens(t, target=e), exact)
        quarter = errors(texts, lambda t: max(1, round(len(t) / 4)), exact)
        for kind in heur:
            h, q = heur[kind], quarter[kind]
            print(f"  {kind:10} heuristic {h[0]:6.1%} {h[1]:6.1%}   len/4 {q[0]:6.1%} {q[1]:6.1%}   n={h[2]}")


if __name__ == "__main__":
    main()
