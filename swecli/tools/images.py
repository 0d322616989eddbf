"""Image files as message parts: detected by name, opened with Pillow, capped in size, base64-encoded.

A large image is scaled down (never up) so its long edge is at most `max_edge` pixels (default 1568,
what Anthropic uses without scaling it again; OpenAI scales to 768 px on the short side anyway), and
re-encoded when its bytes would still pass `max_bytes` (providers refuse images over 5 MB of base64).
PNG, JPEG, GIF and WebP are sent as they are when they fit; other formats Pillow reads (BMP, TIFF)
are sent as PNG.
"""

from __future__ import annotations

import base64
import io
import re
import warnings
from pathlib import Path

from swecli.lazy import regex
from swecli.messages import ImagePart
from swecli.records import datarecord
from swecli.tools.base import ToolError
from swecli.tools.paths import open_confined

IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".tif", ".tiff"})
SENT_AS_IS = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif", "WEBP": "image/webp"}
MAX_EDGE = 1568
MAX_BYTES = 3_750_000
"""Raw bytes; base64 makes them 4/3 larger, under the providers' 5 MB limit."""
MAX_FILE_BYTES = 50_000_000
"""A file larger than this is not opened at all."""
MAX_PIXELS = 50_000_000
"""An image claiming more pixels is not decoded: a few kilobytes of PNG can claim 13,000 × 13,000 pixels, 700 MB
once decoded (Pillow itself refuses only past 179 million)."""


def is_image_path(path: str | Path) -> bool:
    return Path(path).suffix.lower() in IMAGE_SUFFIXES


def load_image(path: Path, shown: str, origin: str, max_edge: int = MAX_EDGE,
               max_bytes: int = MAX_BYTES, root: Path | None = None) -> ImagePart:
    """The image at `path` as a message part (`shown`: how its path is written for the model).
    ToolError (one sentence) when it cannot be read as an image. With `root`, the file is opened from it
    without following links (`paths.open_confined`: read_file's check stands until the read)."""
    from PIL import Image, UnidentifiedImageError

    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise ToolError(f"{shown} is larger than {MAX_FILE_BYTES // 1_000_000} MB; it was not loaded.")
        if root is None:
            raw = path.read_bytes()
        else:
            with open_confined(root, path) as fh:
                raw = fh.read(MAX_FILE_BYTES + 1)
        with warnings.catch_warnings():  # Pillow warns on stderr (over the UI) past 89 million pixels
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            opened = Image.open(io.BytesIO(raw))
        with opened as image:
            if image.width * image.height > MAX_PIXELS:
                raise ToolError(f"{shown} claims {image.width:,} × {image.height:,} pixels, more than swecli decodes "
                                f"({MAX_PIXELS:,}); it was not loaded.")
            image.load()
            return _part(image, raw, shown, origin, max_edge, max_bytes)
    except FileNotFoundError:
        raise ToolError(f"{shown}: no such image file.") from None
    except (UnidentifiedImageError, Image.DecompressionBombError, OSError, ValueError) as exc:
        raise ToolError(f"{shown} could not be read as an image ({type(exc).__name__}); it was not loaded.") from None


def _part(image: object, raw: bytes, shown: str, origin: str, max_edge: int, max_bytes: int) -> ImagePart:
    from PIL import Image

    assert isinstance(image, Image.Image)
    media = SENT_AS_IS.get(image.format or "")
    if media is not None and max(image.size) <= max_edge and len(raw) <= max_bytes and not _animated(image):
        data = raw
        width, height = image.size
    else:
        width, height, media, data = _reencode(image, max_edge, max_bytes)
    return ImagePart(media_type=media, data=base64.b64encode(data).decode("ascii"), width=width, height=height,
                     path=shown, origin=origin)


def _animated(image: object) -> bool:
    return bool(getattr(image, "is_animated", False))


def _reencode(image: object, max_edge: int, max_bytes: int) -> tuple[int, int, str, bytes]:
    """Scaled to `max_edge`, as PNG (or JPEG for photos, and whenever PNG stays too large)."""
    from PIL import Image

    assert isinstance(image, Image.Image)
    if max(image.size) > max_edge:
        scale = max_edge / max(image.size)
        image = image.resize((max(1, round(image.width * scale)), max(1, round(image.height * scale))),
                             Image.Resampling.LANCZOS)
    if image.mode not in ("RGB", "RGBA", "L", "LA"):
        image = image.convert("RGBA" if "transparency" in image.info else "RGB")
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", optimize=True)
    if buffer.tell() <= max_bytes:
        return image.width, image.height, "image/png", buffer.getvalue()
    quality = 85
    while True:  # a large photo: JPEG, lowering quality then size until it fits
        buffer = io.BytesIO()
        image.convert("RGB").save(buffer, format="JPEG", quality=quality)
        if buffer.tell() <= max_bytes or (quality <= 40 and max(image.size) <= 256):
            return image.width, image.height, "image/jpeg", buffer.getvalue()
        if quality > 40:
            quality -= 15
        else:
            image = image.resize((max(1, image.width * 3 // 4), max(1, image.height * 3 // 4)))


# --- images named in a prompt -------------------------------------------------------------------

_SUFFIX = r"\.(?:png|jpe?g|gif|webp|bmp|tiff?)"
_MENTION = regex(r"(?:^|(?<=\s))@(\"[^\"]+\"|'[^']+'|\S+)")
_PASTED = regex(
    rf"""(?:^|(?<=\s))(?:"((?:~|/)[^"]+?{_SUFFIX})"|'((?:~|/)[^']+?{_SUFFIX})'|((?:~|/)(?:[^\s"'\\]|\\.)+?{_SUFFIX}))"""
    r"""(?=$|\s|[.,;:!?)])""", re.IGNORECASE)
"""A path pasted or dropped into the terminal: absolute or ~/..., quoted, or with backslash-escaped spaces."""


@datarecord(frozen=True)
class ImageRef:
    """An image path found in the person's text."""

    raw: str
    """As written (unquoted, unescaped)."""
    mentioned: bool
    """`@path` (a missing file is an error) rather than a pasted path (a missing file is just text)."""


def image_refs(text: str) -> list[ImageRef]:
    """Images a prompt names: `@shot.png` mentions and pasted image paths, in order, once each."""
    found: dict[str, ImageRef] = {}
    for match in _MENTION.finditer(text):
        token = match.group(1)
        raw = token[1:-1] if token[0] in "\"'" else token.rstrip(".,;:!?)\"'")
        if is_image_path(raw):
            found.setdefault(raw, ImageRef(raw, True))
    for match in _PASTED.finditer(text):
        raw = next(g for g in match.groups() if g)
        raw = re.sub(r"\\(.)", r"\1", raw) if match.group(3) else raw
        found.setdefault(raw, ImageRef(raw, False))
    return list(found.values())


def resolve_image(root: Path, raw: str) -> tuple[Path, str]:
    """(the file, how its path is shown): root-relative inside the project, absolute elsewhere."""
    path = Path(raw).expanduser()
    path = (path if path.is_absolute() else root / path).resolve()
    real_root = root.resolve()
    return path, (path.relative_to(real_root).as_posix() if path.is_relative_to(real_root) else str(path))
