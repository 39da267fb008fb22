"""The scene spec of the procedural renderer (pydantic v2): what a clip shows and says, and when.

Every field has a default except what makes the scene itself, so the minimal spec
``{"duration": 4.0, "size": [320, 180], "background": "navy", "objects": [{"shape": "square", "color": "red",
"position": "left"}], "speech": [{"text": "What colour is the square?", "language": "en", "start": 0.5}]}``
renders as it reads. Unknown fields are rejected (a typo must not silently render a different scene).
The full schema is documented in docs/studio.md.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

SPEC_VERSION = 1

NamedPosition = Literal[
    "far-left",
    "left",
    "center-left",
    "center",
    "center-right",
    "right",
    "far-right",
    "top-left",
    "top",
    "top-right",
    "bottom-left",
    "bottom",
    "bottom-right",
]
# Centre of each named place, as fractions of the frame (x from the left, y from the top). Objects stand at
# table height; "top" and "bottom" rows sit above and below it.
NAMED_XY: dict[str, tuple[float, float]] = {
    "far-left": (0.1, 0.62),
    "left": (0.22, 0.62),
    "center-left": (0.36, 0.62),
    "center": (0.5, 0.62),
    "center-right": (0.64, 0.62),
    "right": (0.78, 0.62),
    "far-right": (0.9, 0.62),
    "top-left": (0.22, 0.28),
    "top": (0.5, 0.28),
    "top-right": (0.78, 0.28),
    "bottom-left": (0.22, 0.85),
    "bottom": (0.5, 0.85),
    "bottom-right": (0.78, 0.85),
}
_POSITION_ALIASES = {
    "centre": "center",
    "middle": "center",
    "centre-left": "center-left",
    "centre-right": "center-right",
}


def _check_color(value: Any) -> Any:
    from PIL import ImageColor

    if isinstance(value, (list, tuple)):
        if len(value) != 3 or not all(isinstance(c, int) and 0 <= c <= 255 for c in value):
            raise ValueError("a colour list must be [r, g, b] with integers 0-255")
        return tuple(value)
    try:
        ImageColor.getrgb(str(value))
    except ValueError:
        raise ValueError(f"unknown colour {value!r} (use a CSS name, #rrggbb or [r, g, b])") from None
    return str(value)


Color = Annotated[str | tuple[int, int, int], AfterValidator(_check_color)]
"""A CSS colour name (``"navy"``), ``"#rrggbb"``, or ``[r, g, b]``."""


def _position(value: Any) -> Any:
    if isinstance(value, str):
        v = value.strip().lower().replace("_", "-").replace(" ", "-")
        return _POSITION_ALIASES.get(v, v)
    if isinstance(value, (list, tuple)):
        if len(value) != 2 or not all(isinstance(c, (int, float)) and 0.0 <= c <= 1.0 for c in value):
            raise ValueError("a position list must be [x, y] fractions of the frame, each in 0..1")
        return (float(value[0]), float(value[1]))
    return value


Position = NamedPosition | tuple[float, float]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SceneObject(_Model):
    """A coloured shape standing in the scene, optionally labelled."""

    shape: Literal[
        "square", "rectangle", "circle", "ellipse", "triangle", "diamond", "star", "hexagon", "cube", "cylinder"
    ] = Field(default="square", description="Shape drawn.")
    color: Color = Field(default="red", description="Fill colour.")
    position: Position = Field(
        default="center", description="Named place (left, right, top-left, ...) or [x, y] fractions of the frame."
    )
    size: float = Field(default=0.28, gt=0, le=1, description="Height as a fraction of the frame height.")
    label: str | None = Field(default=None, description="Text written under the shape (Latin script).")
    name: str | None = Field(default=None, description="An id for the timeline (defaults to '<color> <shape>').")
    appear: float = Field(default=0.0, ge=0, description="Seconds at which the object appears.")
    disappear: float | None = Field(default=None, gt=0, description="Seconds at which it vanishes (None: stays).")

    @field_validator("position", mode="before")
    @classmethod
    def _norm_position(cls, value: Any) -> Any:
        return _position(value)


class Person(_Model):
    """A person-like figure (head and shoulders), facing the camera or seen from behind."""

    facing: Literal["camera", "away"] = Field(default="camera", description="'away': seen from behind, no face.")
    position: Position = Field(default="center", description="Where the figure stands (x matters; y is ignored).")
    size: float = Field(default=0.9, gt=0, le=1.5, description="Figure height as a fraction of the frame height.")
    skin: Color = Field(default="peachpuff", description="Skin colour.")
    hair: Color = Field(default="saddlebrown", description="Hair colour.")
    shirt: Color = Field(default="steelblue", description="Shirt colour.")
    expression: Literal["neutral", "happy", "upset", "sad", "surprised"] = Field(
        default="neutral", description="Face drawn (eyebrows and mouth)."
    )
    speaker: str | None = Field(
        default="user", description="The speech speaker whose words move this mouth (None: never moves)."
    )
    appear: float = Field(default=0.0, ge=0, description="Seconds at which the figure appears.")
    disappear: float | None = Field(default=None, gt=0, description="Seconds at which it leaves.")

    @field_validator("position", mode="before")
    @classmethod
    def _norm_position(cls, value: Any) -> Any:
        return _position(value)


class Placard(_Model):
    """On-screen text (a caption or sign), drawn over the scene and never mirrored or dimmed."""

    text: str = Field(description="The text; Latin script unless a CJK font is configured (docs/studio.md).")
    position: Literal["top", "bottom", "center", "top-left", "top-right", "bottom-left", "bottom-right"] = Field(
        default="bottom", description="Where on screen."
    )
    start: float = Field(default=0.0, ge=0, description="Seconds at which it appears.")
    end: float | None = Field(default=None, gt=0, description="Seconds at which it goes (None: stays).")
    text_size: float = Field(default=0.08, gt=0, le=0.5, description="Text height as a fraction of frame height.")
    color: Color = Field(default="white", description="Text colour.")
    box: Color | None = Field(default="black", description="Background box colour (None: no box).")


class Camera(_Model):
    """How the clip was filmed. Accepts the shorthand strings ``"front"`` / ``"selfie"`` / ``"rear"`` / ``"back"``.

    Object positions are image positions (what the clip shows). With the front (selfie) camera the camera faces
    the user, so left and right are mirrored between the image and the user: an object on the image's left
    is on the user's right. With ``positions: "user"``, positions are given from the user's side instead and
    the renderer mirrors them into the image under the front camera.
    """

    mode: Literal["rear", "front"] = Field(default="rear", description="'front' is the selfie camera.")
    positions: Literal["image", "user"] = Field(default="image", description="Frame in which positions are given.")
    label: bool = Field(default=False, description="Write a small FRONT CAM / REAR CAM tag in a corner.")

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        if isinstance(value, str):
            mode = {"selfie": "front", "front": "front", "rear": "rear", "back": "rear"}.get(value.lower())
            if mode is None:
                raise ValueError(f"unknown camera {value!r}: use 'front' (selfie) or 'rear'")
            return {"mode": mode}
        return value


class Lighting(_Model):
    """Overall light. Accepts a shorthand string naming a level or a tint (``"dim"``, ``"warm"``)."""

    level: Literal["dark", "dim", "normal", "bright"] = Field(default="normal", description="Brightness.")
    tint: Literal["neutral", "warm", "cool"] = Field(default="neutral", description="Colour cast.")
    vignette: float = Field(default=0.0, ge=0, le=1, description="Darkening towards the corners (0: none).")

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        if isinstance(value, str):
            v = value.lower()
            if v in ("dark", "dim", "normal", "bright"):
                return {"level": v}
            if v in ("neutral", "warm", "cool"):
                return {"tint": v}
            raise ValueError(f"unknown lighting {value!r}")
        return value


_LANGUAGE_ALIASES = {
    "en": "en",
    "en-us": "en",
    "english": "en",
    "zh": "zh",
    "zh-cn": "zh",
    "cmn": "zh",
    "mandarin": "zh",
    "chinese": "zh",
}


class SpeechLine(_Model):
    """One spoken line. ``[pause]`` / ``[pause 0.8]`` inside ``text`` inserts silence (default 0.5 s)."""

    text: str = Field(min_length=1, description="What is said; may contain [pause N] markers.")
    language: Literal["en", "zh"] = Field(default="en", description="'en' (English) or 'zh' (Mandarin).")
    speaker: str = Field(default="user", description="Who speaks (ties the line to a figure's mouth).")
    voice: str | None = Field(
        default=None,
        description="espeak-ng voice variant (m1-m7, f1-f5, croak, ...) or a full voice name like 'en-us+f3'; "
        "None: a variant chosen per speaker (first speaker m3, second f3, ...).",
    )
    rate: int | None = Field(default=None, ge=80, le=450, description="Words per minute (None: from style).")
    pitch: int | None = Field(default=None, ge=0, le=100, description="Base pitch 0-100 (None: from style).")
    style: Literal["neutral", "upset", "happy", "calm", "sad"] = Field(
        default="neutral", description="Delivery: sets rate, pitch, pitch range and loudness."
    )
    start: float | None = Field(
        default=None, ge=0, description="Seconds at which the line starts (None: 'gap' after the previous line)."
    )
    gap: float = Field(default=0.3, ge=0, description="Silence before an unscheduled line (start=None).")
    gain_db: float = Field(default=0.0, ge=-40, le=20, description="Loudness change in dB.")
    stop_after: float | None = Field(
        default=None, gt=0, description="Cut the line off after this many seconds (an unfinished question)."
    )

    @field_validator("language", mode="before")
    @classmethod
    def _language(cls, value: Any) -> Any:
        if isinstance(value, str):
            norm = _LANGUAGE_ALIASES.get(value.strip().lower())
            if norm is None:
                raise ValueError(f"unsupported language {value!r}: use 'en' (English) or 'zh' (Mandarin)")
            return norm
        return value


class Noise(_Model):
    """Background noise over the whole clip. A bare number is shorthand for pink noise at that level."""

    kind: Literal["white", "pink", "brown", "hum"] = Field(default="pink", description="Noise colour; hum: 50 Hz.")
    level_db: float = Field(default=-40.0, le=0, ge=-90, description="RMS level in dBFS.")

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        if isinstance(value, (int, float)):
            return {"level_db": float(value)}
        return value


_CJK = re.compile(r"[\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]")


def has_cjk(text: str) -> bool:
    """Whether ``text`` contains CJK characters (which the default font cannot draw)."""
    return bool(_CJK.search(text))


class SceneSpec(_Model):
    """A clip to render: picture (background, light, objects, a figure, placards, camera) and sound (speech
    lines, noise), over ``duration`` seconds. The same spec (seed included) always gives the same clip."""

    version: Literal[1] = Field(default=1, description="Schema version (SPEC_VERSION).")
    duration: float | None = Field(
        default=None, gt=0, le=600, description="Seconds (None: the end of the last speech line + 0.7 s)."
    )
    size: tuple[int, int] = Field(default=(320, 180), description="[width, height] in pixels, both even.")
    fps: int = Field(default=25, ge=1, le=60, description="Frames per second.")
    seed: int = Field(default=0, description="Seeds the noise; the same seed gives the same clip.")
    background: Color = Field(default="dimgray", description="Backdrop colour.")
    floor: Color | None = Field(default=None, description="A floor / table band under the objects (None: none).")
    lighting: Lighting = Field(default_factory=Lighting, description="Brightness, tint, vignette.")
    camera: Camera = Field(default_factory=Camera, description="Front (selfie) or rear camera.")
    objects: list[SceneObject] = Field(default_factory=list, description="Shapes in the scene.")
    person: Person | None = Field(default=None, description="An optional person-like figure.")
    placards: list[Placard] = Field(default_factory=list, description="On-screen text.")
    speech: list[SpeechLine] = Field(default_factory=list, description="Spoken lines (may overlap).")
    noise: Noise | None = Field(default=None, description="Background noise (None: silence between words).")
    meta: dict[str, Any] = Field(default_factory=dict, description="Free notes for generators; not rendered.")

    @field_validator("size")
    @classmethod
    def _even(cls, value: tuple[int, int]) -> tuple[int, int]:
        w, h = value
        if not (16 <= w <= 3840 and 16 <= h <= 2160):
            raise ValueError("size must be between 16x16 and 3840x2160")
        if w % 2 or h % 2:
            raise ValueError(f"size {w}x{h}: width and height must be even (H.264 with 4:2:0 chroma)")
        return value

    @model_validator(mode="after")
    def _checks(self) -> SceneSpec:
        for i, placard in enumerate(self.placards):
            if has_cjk(placard.text) and not cjk_font_available():
                raise ValueError(
                    f"placards[{i}] has CJK text {placard.text!r} but no CJK font is configured: set "
                    "OMNIVCHAT_CJK_FONT to a .ttf/.otf/.ttc file, or write the placard in pinyin"
                )
        for i, obj in enumerate(self.objects):
            if obj.label and has_cjk(obj.label) and not cjk_font_available():
                raise ValueError(f"objects[{i}].label has CJK text but no CJK font is configured (OMNIVCHAT_CJK_FONT)")
        return self


def cjk_font_available() -> bool:
    """True when ``$OMNIVCHAT_CJK_FONT`` names an existing font file."""
    import os

    path = os.environ.get("OMNIVCHAT_CJK_FONT")
    return bool(path) and os.path.isfile(path or "")


# ------------------------------------------------------------------------------------------ geometry


def position_xy(spec: SceneSpec, position: Position) -> tuple[float, float]:
    """The image position (fractions of the frame) of a spec position, mirroring it when positions are given
    from the user's side under the front camera."""
    x, y = NAMED_XY[position] if isinstance(position, str) else position
    if spec.camera.positions == "user" and spec.camera.mode == "front":
        x = 1.0 - x
    return x, y


def _side(x: float) -> Literal["left", "center", "right"]:
    return "left" if x < 0.4 else "right" if x > 0.6 else "center"


def image_side(spec: SceneSpec, obj: SceneObject | Person) -> Literal["left", "center", "right"]:
    """Which third of the image ``obj`` appears in (what the clip shows)."""
    return _side(position_xy(spec, obj.position)[0])


def user_side(spec: SceneSpec, obj: SceneObject | Person) -> Literal["left", "center", "right"]:
    """Which side of the user (the person filming) ``obj`` is on: the image side with the rear camera, the
    opposite side with the front (selfie) camera."""
    side = image_side(spec, obj)
    if spec.camera.mode == "front" and side != "center":
        return "right" if side == "left" else "left"
    return side
