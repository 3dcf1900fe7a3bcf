"""Outputs side by side: raw vs cleaned, model A vs model B, run A vs run B.

`CompareModel` is the logic (filters, paging, the word diff) over a DataFrame of the
`outputs` table; `CompareOutputs` only renders it. A run can hold thousands of outputs, so
`rows()` builds (and diffs) the current page only, never the whole frame; and a run can hold
a million, so from a RunFrames the widget reads at most `READ_AT_MOST` outputs of each run
(`where=` and `limit=` choose which, in DuckDB), and says when there were more.
"""

from __future__ import annotations

import difflib
import html
import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from workbench.errors import ConfigError

try:
    import ipywidgets as widgets
except ImportError:  # the `notebooks` extra is missing: the model still works
    widgets = None

GRADES: tuple[str, ...] = ("passed", "failed", "ungraded")
# The outputs of each run the widget reads from a RunFrames by default: pages of twenty over
# them, whatever the size of the run (a frame of a million outputs is refused, FRAME_TOO_BIG).
READ_AT_MOST = 10_000
_TOKENS = re.compile(r"\s+|[^\s]+")


# -------------------------------------------------------------------- the diff
def _opcodes(
    a: str, b: str
) -> tuple[list[str], list[str], Sequence[tuple[str, int, int, int, int]]]:
    ta, tb = _TOKENS.findall(a), _TOKENS.findall(b)
    matcher = difflib.SequenceMatcher(None, ta, tb, autojunk=False)
    return ta, tb, matcher.get_opcodes()


def diff_parts(a: str | None, b: str | None) -> tuple[str, str, str]:
    """(inline diff, left side, right side) as escaped HTML: words only in `a` are
    `<del>`, words only in `b` are `<ins>`; the sides show each text with its own changes."""
    a, b = a or "", b or ""
    ta, tb, ops = _opcodes(a, b)
    inline: list[str] = []
    left: list[str] = []
    right: list[str] = []
    for op, i1, i2, j1, j2 in ops:
        old = html.escape("".join(ta[i1:i2]))
        new = html.escape("".join(tb[j1:j2]))
        if op == "equal":
            inline.append(old)
            left.append(old)
            right.append(new)
            continue
        if old:
            inline.append(f"<del>{old}</del>")
            left.append(f"<del>{old}</del>")
        if new:
            inline.append(f"<ins>{new}</ins>")
            right.append(f"<ins>{new}</ins>")
    return "".join(inline), "".join(left), "".join(right)


def diff_html(a: str | None, b: str | None) -> str:
    """`a` → `b` word by word, HTML-escaped: deleted words in `<del>`, inserted in `<ins>`."""
    return diff_parts(a, b)[0]


# -------------------------------------------------------------------- values
def _text(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(value)


def _passed(value: Any) -> bool | None:
    if value is None or value is pd.NA:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    return bool(value)


def _tags(value: Any) -> tuple[str, ...]:
    """Tags as stored (JSON text from DuckDB, a list, an array, one string) → a tuple."""
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return ()
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return (value,) if value else ()
        if isinstance(value, str):
            return (value,)
    if isinstance(value, dict) or not isinstance(value, Iterable):
        return (str(value),)
    return tuple(str(v) for v in value)


@dataclass(frozen=True)
class Row:
    """One output of the current page. `passed` is None when ungraded; in a pairing it is
    True when both sides passed, False when either failed."""

    item_id: str
    left: str
    right: str
    diff_html: str
    passed: bool | None
    model: str | None
    tags: tuple[str, ...]
    left_html: str = ""
    right_html: str = ""


def _invalid(message: str) -> ConfigError:
    return ConfigError(message, code="COMPARE_INVALID", status=400)


# -------------------------------------------------------------------- the model
class CompareModel:
    """Filters and pages over outputs; `left`/`right` name the two text columns.

    `df` is `RunFrames.outputs()` (optionally joined with the items' `tags`) or a pairing
    from `models()` / `runs()`. Filters: `tag`, `model` (the `key` column), `grade`
    ("passed" | "failed" | "ungraded" | None); changing one goes back to the first page.
    """

    def __init__(
        self,
        df: pd.DataFrame,
        *,
        left: str = "raw",
        right: str = "cleaned",
        page_size: int = 20,
        left_label: str | None = None,
        right_label: str | None = None,
    ) -> None:
        for column in ("item_id", left, right):
            if column not in df.columns:
                raise _invalid(f"the outputs have no {column!r} column ({', '.join(df.columns)})")
        if int(page_size) < 1:
            raise _invalid(f"page_size must be at least 1, not {page_size}")
        self.left, self.right = left, right
        self.left_label = left_label or left
        self.right_label = right_label or right
        self.page_size = int(page_size)
        n = len(df)
        # Only the cheap columns are normalised up front; texts and diffs wait for their page.
        self._df = df.reset_index(drop=True)
        self._tags = [_tags(v) for v in df["tags"]] if "tags" in df.columns else [()] * n
        self._models = [
            None if _text(v) == "" else _text(v)
            for v in (df["key"] if "key" in df.columns else [None] * n)
        ]
        self._passed = [_passed(v) for v in df["passed"]] if "passed" in df.columns else [None] * n
        self._tag: str | None = None
        self._model: str | None = None
        self._grade: str | None = None
        self._page = 0
        self._index: list[int] = list(range(n))

    # ---------------------------------------------------------------- pairings
    @classmethod
    def models(
        cls,
        df: pd.DataFrame,
        model_a: str,
        model_b: str,
        *,
        column: str = "cleaned",
        page_size: int = 20,
    ) -> CompareModel:
        """Model A vs model B (the `key` column): rows paired by item_id (and repeat)."""
        return cls._pair(df, "key", model_a, model_b, column, page_size, ("item_id", "repeat"))

    @classmethod
    def runs(
        cls,
        df: pd.DataFrame,
        run_a: str,
        run_b: str,
        *,
        column: str = "cleaned",
        page_size: int = 20,
        on: Sequence[str] = ("item_id", "repeat", "key"),
    ) -> CompareModel:
        """Run A vs run B: rows paired by item_id, repeat and model (`on`)."""
        return cls._pair(df, "run_id", run_a, run_b, column, page_size, tuple(on))

    @classmethod
    def _pair(
        cls,
        df: pd.DataFrame,
        by: str,
        a: str,
        b: str,
        column: str,
        page_size: int,
        on: tuple[str, ...],
    ) -> CompareModel:
        for col in (by, column, "item_id"):
            if col not in df.columns:
                raise _invalid(f"the outputs have no {col!r} column")
        keys = [c for c in on if c in df.columns and c != by]
        side_a = df[df[by] == a].drop_duplicates(keys)
        side_b = df[df[by] == b].drop_duplicates(keys)
        for chosen, name in ((side_a, a), (side_b, b)):
            if chosen.empty:
                raise _invalid(f"no output has {by} = {name!r}")
        extras = [c for c in (column, "passed", "tags", "key") if c in df.columns and c not in keys]
        paired = side_a[[*keys, *extras]].merge(
            side_b[[*keys, *extras]], on=keys, suffixes=("_a", "_b"), how="inner"
        )

        def side(col: str, suffix: str) -> Any:
            return paired[col] if col in keys else paired[f"{col}_{suffix}"]

        out = pd.DataFrame({"item_id": paired["item_id"], "a": side(column, "a")})
        out["b"] = side(column, "b")
        if "passed" in df.columns:
            out["passed"] = [
                _both(_passed(x), _passed(y))
                for x, y in zip(side("passed", "a"), side("passed", "b"), strict=True)
            ]
        if "tags" in df.columns:
            out["tags"] = side("tags", "a")
        # pairing two models: the pair is the model; pairing two runs: each row's model
        out["key"] = side("key", "a") if by != "key" and "key" in df.columns else f"{a} vs {b}"
        return cls(out, left="a", right="b", page_size=page_size, left_label=a, right_label=b)

    # ---------------------------------------------------------------- filters
    @property
    def tags(self) -> list[str]:
        """Every tag present, sorted (the choices of the tag filter)."""
        return sorted({t for tags in self._tags for t in tags})

    @property
    def model_names(self) -> list[str]:
        """Every model (`key`) present, sorted."""
        return sorted({m for m in self._models if m is not None})

    def _refilter(self) -> None:
        self._index = [
            i
            for i in range(len(self._df))
            if (self._tag is None or self._tag in self._tags[i])
            and (self._model is None or self._models[i] == self._model)
            and (self._grade is None or _grade_of(self._passed[i]) == self._grade)
        ]
        self._page = 0

    @property
    def tag(self) -> str | None:
        return self._tag

    @tag.setter
    def tag(self, value: str | None) -> None:
        self._tag = value or None
        self._refilter()

    @property
    def model(self) -> str | None:
        return self._model

    @model.setter
    def model(self, value: str | None) -> None:
        self._model = value or None
        self._refilter()

    @property
    def grade(self) -> str | None:
        return self._grade

    @grade.setter
    def grade(self, value: str | None) -> None:
        if value is not None and value not in GRADES:
            raise _invalid(f"grade must be one of {', '.join(GRADES)} or None, not {value!r}")
        self._grade = value
        self._refilter()

    def set_filters(
        self, *, tag: str | None = None, model: str | None = None, grade: str | None = None
    ) -> None:
        """All three filters at once (None = no filter)."""
        if grade is not None and grade not in GRADES:
            raise _invalid(f"grade must be one of {', '.join(GRADES)} or None, not {grade!r}")
        self._tag, self._model, self._grade = tag or None, model or None, grade
        self._refilter()

    # ---------------------------------------------------------------- paging
    @property
    def count(self) -> int:
        """How many outputs pass the filters."""
        return len(self._index)

    @property
    def pages(self) -> int:
        return max(1, math.ceil(len(self._index) / self.page_size))

    @property
    def page(self) -> int:
        """The current page, from 0."""
        return self._page

    @page.setter
    def page(self, value: int) -> None:
        self._page = min(max(0, int(value)), self.pages - 1)

    def next(self) -> bool:
        """Go to the next page; False (and stay) on the last one."""
        if self._page + 1 >= self.pages:
            return False
        self._page += 1
        return True

    def prev(self) -> bool:
        """Go to the previous page; False (and stay) on the first one."""
        if self._page == 0:
            return False
        self._page -= 1
        return True

    def rows(self) -> list[Row]:
        """The current page's rows (at most `page_size`), diffed now."""
        start = self._page * self.page_size
        out = []
        for i in self._index[start : start + self.page_size]:
            record = self._df.iloc[i]
            left, right = _text(record[self.left]), _text(record[self.right])
            inline, left_html, right_html = diff_parts(left, right)
            out.append(
                Row(
                    item_id=_text(record["item_id"]),
                    left=left,
                    right=right,
                    diff_html=inline,
                    passed=self._passed[i],
                    model=self._models[i],
                    tags=self._tags[i],
                    left_html=left_html,
                    right_html=right_html,
                )
            )
        return out


def _both(a: bool | None, b: bool | None) -> bool | None:
    if a is False or b is False:
        return False
    if a is None or b is None:
        return None
    return True


def _grade_of(passed: bool | None) -> str:
    return "ungraded" if passed is None else ("passed" if passed else "failed")


def outputs_with_tags(
    frames: Any,
    run_id: str | Sequence[str] | None = None,
    *,
    where: str | None = None,
    params: Sequence[Any] = (),
    limit: int | None = None,
) -> pd.DataFrame:
    """`RunFrames.outputs(run_id)` joined with the items' `tags` and `category` (`where=` and
    `limit=` pushed into DuckDB, refused past the RunFrames' `max_rows`). The widgets are the
    library's and never import `workbench.eval`: the read is the RunFrames' own."""
    frame: pd.DataFrame = frames.outputs_with_tags(run_id, where=where, params=params, limit=limit)
    return frame


def _read(
    frames: Any,
    runs: tuple[str, ...],
    where: str | None,
    params: Sequence[Any],
    limit: int | None,
) -> tuple[pd.DataFrame, bool]:
    """The first `limit` (`READ_AT_MOST`) outputs of each run (of every run when none is
    named) in item order, and whether a run had more: one more row is asked for to know it."""
    limit = READ_AT_MOST if limit is None else limit
    if limit < 1:
        raise _invalid(f"limit must be at least 1, not {limit}")
    reads = [
        outputs_with_tags(frames, run or None, where=where, params=params, limit=limit + 1)
        for run in (runs or ("",))
    ]
    more = any(len(read) > limit for read in reads)
    return pd.concat([read.iloc[:limit] for read in reads], ignore_index=True), more


# -------------------------------------------------------------------- rendering
_STYLE = (
    "<style>.wb-compare td{vertical-align:top;white-space:pre-wrap;text-align:left}"
    ".wb-compare del{background:#fdd;text-decoration:line-through}"
    ".wb-compare ins{background:#dfd;text-decoration:none}</style>"
)


def table_html(model: CompareModel) -> str:
    """The current page as an HTML table, left and right side by side (all text escaped)."""
    rows = model.rows()
    if not rows:
        return "<p class='wb-empty'><i>No output matches these filters.</i></p>"
    e = html.escape
    head = (
        f"<tr><th>item</th><th>model</th><th>grade</th><th>tags</th>"
        f"<th>{e(model.left_label)}</th><th>{e(model.right_label)}</th></tr>"
    )
    body = "".join(
        f"<tr class='wb-row' data-item-id='{e(r.item_id)}'><td>{e(r.item_id)}</td>"
        f"<td>{e(r.model or '')}</td><td>{_grade_of(r.passed)}</td>"
        f"<td>{e(', '.join(r.tags))}</td><td>{r.left_html}</td><td>{r.right_html}</td></tr>"
        for r in rows
    )
    return f"{_STYLE}<table class='wb-compare'><thead>{head}</thead><tbody>{body}</tbody></table>"


def _model_from(
    source: Any,
    runs: tuple[str, ...],
    *,
    left: str,
    right: str,
    model_a: str | None,
    model_b: str | None,
    page_size: int,
    where: str | None = None,
    params: Sequence[Any] = (),
    limit: int | None = None,
) -> tuple[CompareModel, bool]:
    """The model to render, and whether a run had outputs past those read (`limit`)."""
    if isinstance(source, CompareModel):
        return source, False
    if isinstance(source, tuple):  # (RunFrames, run_id, ...)
        source, runs = source[0], (*source[1:], *runs)
    more = False
    if isinstance(source, pd.DataFrame):
        df = source
    elif hasattr(source, "outputs_with_tags"):  # a RunFrames
        df, more = _read(source, runs, where, params, limit)
    else:
        raise _invalid(
            "CompareOutputs takes a DataFrame, a CompareModel, or a RunFrames with run ids, "
            f"not {type(source).__name__}"
        )
    if len(runs) == 2:
        return CompareModel.runs(df, runs[0], runs[1], column=right, page_size=page_size), more
    if len(runs) > 2:
        raise _invalid(f"compare one run or two, not {len(runs)}")
    if model_a is not None and model_b is not None:
        paired = CompareModel.models(df, model_a, model_b, column=right, page_size=page_size)
        return paired, more
    return CompareModel(df, left=left, right=right, page_size=page_size), more


_VBox: Any = widgets.VBox if widgets is not None else object


def _options(values: list[str], everything: str) -> list[tuple[str, str | None]]:
    return [(everything, None), *((v, v) for v in values)]


class CompareOutputs(_VBox):
    """Filter dropdowns (tag, model, grade), Prev / Next, and the current page side by side.

    `CompareOutputs(df)` compares `raw` and `cleaned`; `CompareOutputs((wb, run_id))` reads
    a run (with its items' tags); `CompareOutputs(wb, run_a, run_b)` pairs two runs;
    `model_a=` / `model_b=` pair two models; a ready `CompareModel` is rendered as is.
    From a RunFrames it reads the first `limit` outputs of each run in item order (`where=`,
    a SQL condition on the outputs' columns with `tags` and `category`, `?` for each of
    `params=`, chooses which): a big run is paged through what was read, and `partial` says
    that a run had more.
    """

    def __init__(
        self,
        source: Any,
        *runs: str,
        left: str = "raw",
        right: str = "cleaned",
        model_a: str | None = None,
        model_b: str | None = None,
        page_size: int = 20,
        where: str | None = None,
        params: Sequence[Any] = (),
        limit: int | None = None,
    ) -> None:
        if widgets is None:
            raise ConfigError(
                "ipywidgets is not installed: install the `notebooks` extra; "
                "CompareModel works without it",
                code="WIDGETS_UNAVAILABLE",
                status=400,
            )
        self.model, self.partial = _model_from(
            source,
            tuple(runs),
            left=left,
            right=right,
            model_a=model_a,
            model_b=model_b,
            page_size=page_size,
            where=where,
            params=params,
            limit=limit,
        )
        self.limit = READ_AT_MOST if limit is None else limit
        m = self.model
        self.tag_filter = widgets.Dropdown(
            options=_options(m.tags, "all tags"), value=None, description="Tag"
        )
        self.model_filter = widgets.Dropdown(
            options=_options(m.model_names, "all models"), value=None, description="Model"
        )
        self.grade_filter = widgets.Dropdown(
            options=_options(list(GRADES), "all grades"), value=None, description="Grade"
        )
        self.prev_button = widgets.Button(description="Prev", icon="arrow-left")
        self.next_button = widgets.Button(description="Next", icon="arrow-right")
        self.page_label = widgets.Label()
        self.table = widgets.HTML()
        for w, css in (
            (self.tag_filter, "wb-tag"),
            (self.model_filter, "wb-model"),
            (self.grade_filter, "wb-grade"),
            (self.prev_button, "wb-prev"),
            (self.next_button, "wb-next"),
            (self.page_label, "wb-page"),
            (self.table, "wb-table"),
        ):
            w.add_class(css)
        super().__init__(
            children=[
                widgets.HBox([self.tag_filter, self.model_filter, self.grade_filter]),
                widgets.HBox([self.prev_button, self.page_label, self.next_button]),
                self.table,
            ]
        )
        self.add_class("wb-compare-outputs")
        for dropdown in (self.tag_filter, self.model_filter, self.grade_filter):
            dropdown.observe(self._on_filter, names="value")
        self.prev_button.on_click(lambda _b: self._move(self.model.prev))
        self.next_button.on_click(lambda _b: self._move(self.model.next))
        self.render()

    def _on_filter(self, _change: dict[str, Any]) -> None:
        self.model.set_filters(
            tag=self.tag_filter.value, model=self.model_filter.value, grade=self.grade_filter.value
        )
        self.render()

    def _move(self, step: Any) -> None:
        if step():
            self.render()

    def render(self) -> None:
        """Show the model's current page."""
        m = self.model
        self.page_label.value = f"page {m.page + 1} / {m.pages} · {m.count} outputs" + (
            f" (the first {self.limit:,} of each run: where= or limit= for others)"
            if self.partial
            else ""
        )
        self.prev_button.disabled = m.page == 0
        self.next_button.disabled = m.page + 1 >= m.pages
        self.table.value = table_html(m)
