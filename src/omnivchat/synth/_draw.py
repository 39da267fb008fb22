"""Drawing the frames of a scene with Pillow.

A frame depends only on a small state (which objects, placards and figure are visible, whether the mouth is
open), so each distinct state is drawn once and reused: a 10 s clip usually needs a handful of drawings, not
250.
"""

from __future__ import annotations

import functools
import math
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from PIL import Image, ImageColor, ImageDraw, ImageFont

from omnivchat.synth._scene import Person, Placard, SceneObject, SceneSpec, has_cjk, position_xy

if TYPE_CHECKING:
    from PIL.ImageFont import FreeTypeFont

RGB = tuple[int, int, int]

_LEVEL = {"dark": 0.35, "dim": 0.6, "normal": 1.0, "bright": 1.3}
_TINT = {"neutral": (1.0, 1.0, 1.0), "warm": (1.08, 1.0, 0.84), "cool": (0.88, 0.97, 1.1)}
_WIDTH = {"rectangle": 1.6, "ellipse": 1.5, "cylinder": 0.8}


@dataclass(frozen=True)
class FrameState:
    """What a frame shows: the visible objects / placards (flags in spec order), the figure, its mouth."""

    objects: tuple[bool, ...]
    placards: tuple[bool, ...]
    person: bool
    mouth_open: bool


def rgb(color: str | tuple[int, int, int]) -> RGB:
    """A spec colour as an (r, g, b) tuple."""
    if isinstance(color, tuple):
        return color
    value = ImageColor.getrgb(color)
    return value[0], value[1], value[2]


def _shade(color: RGB, factor: float) -> RGB:
    return tuple(max(0, min(255, round(c * factor))) for c in color)  # type: ignore[return-value]  # three channels in, three out


def _luma(color: RGB) -> float:
    return 0.299 * color[0] + 0.587 * color[1] + 0.114 * color[2]


@functools.cache
def font(size: int, cjk: bool = False) -> FreeTypeFont:
    """Pillow's bundled font (Latin; no font files needed), or the CJK font at ``$OMNIVCHAT_CJK_FONT``."""
    path = os.environ.get("OMNIVCHAT_CJK_FONT")
    if cjk and path:
        return ImageFont.truetype(path, size=size)
    return ImageFont.load_default(size=size)  # type: ignore[return-value]  # Pillow types load_default as either font class; both draw the same


def object_box(spec: SceneSpec, obj: SceneObject) -> tuple[int, int, int, int]:
    """The pixel box (x0, y0, x1, y1) of an object's shape in the image."""
    w, h = spec.size
    x, y = position_xy(spec, obj.position)
    oh = obj.size * h
    ow = oh * _WIDTH.get(obj.shape, 1.0)
    cx, cy = x * w, y * h
    return round(cx - ow / 2), round(cy - oh / 2), round(cx + ow / 2), round(cy + oh / 2)


def person_box(spec: SceneSpec, person: Person) -> tuple[int, int, int, int]:
    """The pixel box of the figure (head and shoulders, cut by the bottom of the frame)."""
    w, h = spec.size
    x, _ = position_xy(spec, person.position)
    fh = person.size * h
    half = 0.42 * fh
    return round(x * w - half), round(h - fh), round(x * w + half), h


def placard_box(spec: SceneSpec, placard: Placard) -> tuple[int, int, int, int]:
    """The pixel box of a placard (its text box with padding)."""
    return _placard_layout(spec, placard)[0]


def _wrap(text: str, fnt: FreeTypeFont, width: float) -> list[str]:
    words = text.split(" ") if " " in text else list(text) if has_cjk(text) else [text]
    joiner = " " if " " in text else ""
    lines: list[str] = []
    line = ""
    for word in words:
        trial = f"{line}{joiner}{word}" if line else word
        if line and fnt.getlength(trial) > width:
            lines.append(line)
            line = word
        else:
            line = trial
    return [*lines, line] if line else lines


def _placard_layout(spec: SceneSpec, placard: Placard) -> tuple[tuple[int, int, int, int], list[str], FreeTypeFont]:
    w, h = spec.size
    size = max(8, round(placard.text_size * h))
    fnt = font(size, has_cjk(placard.text))
    pad = max(2, size // 4)
    lines = _wrap(placard.text, fnt, 0.9 * w - 2 * pad)
    line_h = round(size * 1.2)
    tw = max((fnt.getlength(line) for line in lines), default=0)
    bw, bh = round(tw + 2 * pad), line_h * len(lines) + 2 * pad
    margin = round(0.03 * h)
    pos = placard.position
    x0 = (w - bw) // 2 if pos in ("top", "bottom", "center") else margin if pos.endswith("left") else w - margin - bw
    y0 = margin if pos.startswith("top") else h - margin - bh if pos.startswith("bottom") else (h - bh) // 2
    return (x0, y0, x0 + bw, y0 + bh), lines, fnt


class SceneDrawer:
    """Draws the frames of one spec; :meth:`frame` returns raw RGB bytes, cached per :class:`FrameState`."""

    def __init__(self, spec: SceneSpec) -> None:
        self.spec = spec
        self.size = spec.size
        self._cache: dict[FrameState, bytes] = {}
        self._light = self._lighting()
        bg = rgb(spec.background)
        self._label_color: RGB = (20, 20, 20) if _luma(bg) > 140 else (240, 240, 240)

    def _lighting(self) -> np.ndarray | None:
        light = self.spec.lighting
        level, tint = _LEVEL[light.level], _TINT[light.tint]
        if level == 1.0 and tint == (1.0, 1.0, 1.0) and light.vignette == 0:
            return None
        w, h = self.size
        gain = np.ones((h, w, 3), np.float32) * np.array(tint, np.float32) * level
        if light.vignette:
            yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
            r2 = ((xx - w / 2) / (w / 2)) ** 2 + ((yy - h / 2) / (h / 2)) ** 2
            gain *= (1.0 - light.vignette * 0.5 * r2)[..., None]
        return gain

    def frame(self, state: FrameState) -> bytes:
        """The frame for ``state`` as ``width * height * 3`` bytes of RGB."""
        cached = self._cache.get(state)
        if cached is None:
            cached = self._draw(state).tobytes()
            self._cache[state] = cached
        return cached

    def image(self, state: FrameState) -> Image.Image:
        """The frame for ``state`` as a Pillow image (for previews)."""
        w, h = self.size
        return Image.frombytes("RGB", (w, h), self.frame(state))

    # -------------------------------------------------------------------------------------------- drawing

    def _draw(self, state: FrameState) -> Image.Image:
        spec = self.spec
        w, h = self.size
        img = Image.new("RGB", (w, h), rgb(spec.background))
        d = ImageDraw.Draw(img)
        if spec.person is not None and state.person:
            self._person(d, spec.person, state.mouth_open)
        if spec.floor is not None:
            d.rectangle([0, round(0.7 * h), w, h], fill=rgb(spec.floor))
        for obj, visible in zip(spec.objects, state.objects, strict=True):
            if visible:
                self._object(d, obj)
        if self._light is not None:
            arr = np.asarray(img, dtype=np.float32) * self._light
            img = Image.fromarray(np.clip(arr + 0.5, 0, 255).astype(np.uint8), "RGB")
            d = ImageDraw.Draw(img)
        # Overlays: not part of the lit scene.
        for placard, visible in zip(spec.placards, state.placards, strict=True):
            if visible:
                self._placard(d, placard)
        if spec.camera.label:
            tag = "FRONT CAM" if spec.camera.mode == "front" else "REAR CAM"
            size = max(8, round(0.06 * h))
            d.ellipse([size // 2, size // 2, size // 2 + size // 2, size], fill=(220, 30, 30))
            d.text((size + size // 2, size // 2 - 1), tag, font=font(size), fill=(255, 255, 255))
        return img

    def _object(self, d: ImageDraw.ImageDraw, obj: SceneObject) -> None:
        x0, y0, x1, y1 = object_box(self.spec, obj)
        color = rgb(obj.color)
        edge = _shade(color, 0.55)
        width = max(1, round((y1 - y0) / 30))
        cx, cy, oh = (x0 + x1) / 2, (y0 + y1) / 2, y1 - y0
        shape = obj.shape
        if shape in ("square", "rectangle"):
            d.rectangle([x0, y0, x1, y1], fill=color, outline=edge, width=width)
        elif shape in ("circle", "ellipse"):
            d.ellipse([x0, y0, x1, y1], fill=color, outline=edge, width=width)
        elif shape == "triangle":
            d.polygon([(cx, y0), (x1, y1), (x0, y1)], fill=color, outline=edge, width=width)
        elif shape == "diamond":
            d.polygon([(cx, y0), (x1, cy), (cx, y1), (x0, cy)], fill=color, outline=edge, width=width)
        elif shape == "star":
            pts = []
            for k in range(10):
                r = (oh / 2) if k % 2 == 0 else (oh / 2) * 0.45
                a = -math.pi / 2 + k * math.pi / 5
                pts.append((cx + r * math.cos(a), cy + 0.08 * oh + r * math.sin(a)))
            d.polygon(pts, fill=color, outline=edge, width=width)
        elif shape == "hexagon":
            d.regular_polygon((cx, cy, oh / 2), 6, fill=color, outline=edge, width=width)
        elif shape == "cube":
            depth = 0.28 * oh
            front = [x0, y0 + depth, x1 - depth, y1]
            d.polygon(
                [(x0, y0 + depth), (x0 + depth, y0), (x1, y0), (x1 - depth, y0 + depth)],
                fill=_shade(color, 1.25),
                outline=edge,
            )
            d.polygon(
                [(x1 - depth, y0 + depth), (x1, y0), (x1, y1 - depth), (x1 - depth, y1)],
                fill=_shade(color, 0.75),
                outline=edge,
            )
            d.rectangle(front, fill=color, outline=edge, width=width)
        elif shape == "cylinder":
            cap = 0.18 * oh
            d.ellipse([x0, y1 - cap, x1, y1], fill=_shade(color, 0.8), outline=edge, width=width)
            d.rectangle([x0, y0 + cap / 2, x1, y1 - cap / 2], fill=color)
            d.line([(x0, y0 + cap / 2), (x0, y1 - cap / 2)], fill=edge, width=width)
            d.line([(x1, y0 + cap / 2), (x1, y1 - cap / 2)], fill=edge, width=width)
            d.ellipse([x0, y0, x1, y0 + cap], fill=_shade(color, 1.2), outline=edge, width=width)
        if obj.label:
            size = max(8, round(0.06 * self.size[1]))
            fnt = font(size, has_cjk(obj.label))
            tw = fnt.getlength(obj.label)
            d.text((cx - tw / 2, y1 + max(2, size // 4)), obj.label, font=fnt, fill=self._label_color)

    def _person(self, d: ImageDraw.ImageDraw, person: Person, mouth_open: bool) -> None:
        x0, y0, x1, y1 = person_box(self.spec, person)
        fh = y1 - y0
        cx = (x0 + x1) / 2
        r = 0.17 * fh  # head radius
        hy = y0 + r  # head centre
        skin, hair, shirt = rgb(person.skin), rgb(person.hair), rgb(person.shirt)
        # Torso and neck.
        neck_top = hy + 0.8 * r
        d.rectangle([cx - 0.35 * r, neck_top, cx + 0.35 * r, neck_top + 0.6 * r], fill=_shade(skin, 0.9))
        d.rounded_rectangle(
            [x0, neck_top + 0.45 * r, x1, y1 + r], radius=max(1, round(0.8 * r)), fill=shirt, outline=_shade(shirt, 0.6)
        )
        if person.facing == "away":
            d.ellipse([cx - 1.08 * r, hy - 0.55 * r, cx - 0.82 * r, hy + 0.25 * r], fill=skin)  # ears
            d.ellipse([cx + 0.82 * r, hy - 0.55 * r, cx + 1.08 * r, hy + 0.25 * r], fill=skin)
            d.ellipse([cx - r, hy - r, cx + r, hy + r], fill=hair)  # the back of the head is all hair
            return
        d.ellipse([cx - r, hy - r, cx + r, hy + r], fill=skin)
        d.chord([cx - 1.02 * r, hy - 1.05 * r, cx + 1.02 * r, hy + 0.2 * r], 180, 360, fill=hair)
        dark = (30, 25, 25)
        ex, ey, er = 0.38 * r, hy + 0.05 * r, max(1.0, 0.11 * r)
        for sx in (-1, 1):
            d.ellipse([cx + sx * ex - er, ey - er, cx + sx * ex + er, ey + er], fill=dark)
        bw = max(1, round(0.07 * r))
        by = ey - 0.3 * r
        # Eyebrows: the slant is what reads as an expression at this size.
        slant = {"upset": 0.16, "sad": -0.14, "surprised": 0.0}.get(person.expression, 0.0)
        lift = 0.12 * r if person.expression == "surprised" else 0.0
        for sx in (-1, 1):
            inner, outer = cx + sx * 0.18 * r, cx + sx * 0.58 * r
            d.line([(inner, by - lift + slant * r), (outer, by - lift - slant * r)], fill=dark, width=bw)
        if person.expression == "upset":
            for sx in (-1, 1):  # flushed cheeks
                d.ellipse(
                    [cx + sx * 0.55 * r - 0.14 * r, hy + 0.3 * r, cx + sx * 0.55 * r + 0.14 * r, hy + 0.45 * r],
                    fill=(225, 110, 110),
                )
        my, mw = hy + 0.5 * r, 0.32 * r
        mouth = (120, 30, 40)
        if mouth_open or person.expression == "surprised":
            d.ellipse([cx - 0.6 * mw, my - 0.1 * r, cx + 0.6 * mw, my + 0.2 * r], fill=mouth)
        elif person.expression == "happy":
            d.arc([cx - mw, my - 0.25 * r, cx + mw, my + 0.12 * r], 20, 160, fill=mouth, width=bw + 1)
        elif person.expression in ("upset", "sad"):
            d.arc([cx - mw, my, cx + mw, my + 0.35 * r], 200, 340, fill=mouth, width=bw + 1)
        else:
            d.line([(cx - 0.8 * mw, my + 0.05 * r), (cx + 0.8 * mw, my + 0.05 * r)], fill=mouth, width=bw + 1)

    def _placard(self, d: ImageDraw.ImageDraw, placard: Placard) -> None:
        (x0, y0, x1, y1), lines, fnt = _placard_layout(self.spec, placard)
        if placard.box is not None:
            d.rectangle([x0, y0, x1, y1], fill=rgb(placard.box))
        size = fnt.size
        pad = max(2, size // 4)
        line_h = round(size * 1.2)
        for i, line in enumerate(lines):
            lx = x0 + ((x1 - x0) - fnt.getlength(line)) / 2
            d.text((lx, y0 + pad + i * line_h), line, font=fnt, fill=rgb(placard.color))
