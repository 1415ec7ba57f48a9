"""The SVG shapes the report's charts are made of: html.py and its views place them, svg.j2
writes them (so no template does arithmetic)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Text:
    """An SVG <text> label (svg.j2's `text`)."""

    x: Any
    y: Any
    size: int
    text: str
    kind: str = "text"


@dataclass(frozen=True)
class Bar:
    """An SVG <rect> with its hover text (svg.j2's `bar`); sizes arrive formatted."""

    x: Any
    y: Any
    width: str
    height: Any
    fill: str
    title: str
    kind: str = "bar"
