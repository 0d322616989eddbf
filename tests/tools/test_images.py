"""Image files as message parts (real PNG/JPEG/BMP files made with Pillow) and image paths in prompts."""

from __future__ import annotations

import base64
import io
import struct
import zlib
from pathlib import Path

import pytest
from PIL import Image

from swecli.tools.base import ToolContext, ToolError
from swecli.tools.files import ReadFileArgs, read_file
from swecli.tools.images import image_refs, load_image, resolve_image


def make_image(path: Path, size: tuple[int, int], fmt: str = "PNG", noise: bool = False) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    image = Image.new("RGB", size, (200, 30, 30))
    if noise:
        image = Image.effect_noise(size, 90).convert("RGB")
    image.save(path, format=fmt)
    return path


def decoded(data: str) -> Image.Image:
    return Image.open(io.BytesIO(base64.b64decode(data)))


def test_a_small_png_is_sent_as_it_is(tmp_path: Path) -> None:
    path = make_image(tmp_path / "shot.png", (320, 200))
    part = load_image(path, "shot.png", "attached by the user")
    assert (part.media_type, part.width, part.height, part.path) == ("image/png", 320, 200, "shot.png")
    assert base64.b64decode(part.data) == path.read_bytes()


def test_a_large_image_is_scaled_down_to_the_max_edge(tmp_path: Path) -> None:
    path = make_image(tmp_path / "big.png", (4000, 1000))
    part = load_image(path, "big.png", "attached by the user", max_edge=1568)
    assert (part.width, part.height) == (1568, 392)
    assert decoded(part.data).size == (1568, 392)


def test_an_image_too_heavy_for_png_becomes_a_jpeg_within_the_byte_cap(tmp_path: Path) -> None:
    # Noise: PNG cannot shrink it, and JPEG fits only after every quality step and one scaling (the same path
    # as 1,500 px into 400 kB, at the same bytes per pixel, for a seventh of the encoding).
    path = make_image(tmp_path / "photo.png", (600, 600), noise=True)
    part = load_image(path, "photo.png", "attached by the user", max_bytes=64_000)
    assert part.media_type == "image/jpeg" and len(base64.b64decode(part.data)) <= 64_000


def test_other_formats_are_sent_as_png(tmp_path: Path) -> None:
    part = load_image(make_image(tmp_path / "old.bmp", (64, 48), fmt="BMP"), "old.bmp", "read with read_file")
    assert part.media_type == "image/png" and decoded(part.data).format == "PNG"


def test_a_file_that_is_not_an_image_is_one_sentence(tmp_path: Path) -> None:
    fake = tmp_path / "fake.png"
    fake.write_text("not an image")
    with pytest.raises(ToolError, match=r"^fake.png could not be read as an image \(UnidentifiedImageError\)"):
        load_image(fake, "fake.png", "attached by the user")


def test_read_file_returns_an_image_or_a_sentence_for_a_text_only_model(project: Path) -> None:
    make_image(project / "docs" / "ui.png", (100, 80))
    result = read_file(ReadFileArgs(path="docs/ui.png"), ToolContext(root=project))
    assert result.content == "Image docs/ui.png (100×80 PNG) is attached." and len(result.images) == 1
    assert result.images[0].origin == "read with read_file"
    with pytest.raises(ToolError, match=r"docs/ui\.png is an image, and the current model does not accept images"):
        read_file(ReadFileArgs(path="docs/ui.png"), ToolContext(root=project, images=False))


def test_image_references_in_a_prompt() -> None:
    text = ("why does @shots/bug.png look wrong? compare @notes.md, /home/me/Screen\\ Shot\\ 2.png and "
            "'/tmp/my capture.jpeg', and @\"with space.webp\". /not/an/image.txt")
    refs = image_refs(text)
    assert [(r.raw, r.mentioned) for r in refs] == [
        ("shots/bug.png", True), ("with space.webp", True),
        ("/home/me/Screen Shot 2.png", False), ("/tmp/my capture.jpeg", False)]


def test_resolved_paths_are_root_relative_inside_the_project(project: Path, tmp_path: Path) -> None:
    assert resolve_image(project, "a/b.png")[1] == "a/b.png"
    outside = tmp_path / "elsewhere.png"
    assert resolve_image(project, str(outside)) == (outside.resolve(), str(outside.resolve()))


def test_an_image_claiming_too_many_pixels_is_not_decoded(tmp_path: Path) -> None:
    """A few hundred kilobytes of PNG can claim 13,000 x 13,000 pixels (found by the independent check)."""
    width = height = 13_000
    # Compressed as a stream, a thousand rows at a time: the 169 MB of rows never exist at once (building
    # them took seconds of page faults on a loaded machine), and level 1 deflates them 4x faster than 9.
    packer = zlib.compressobj(1)
    block = b"\x00" * (width + 1) * 1_000
    rows = b"".join(packer.compress(block) for _ in range(height // 1_000)) + packer.flush()

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    bomb = tmp_path / "bomb.png"
    bomb.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
                     + chunk(b"IDAT", rows) + chunk(b"IEND", b""))
    with pytest.raises(ToolError, match="claims 13,000 × 13,000 pixels"):
        load_image(bomb, "bomb.png", "read")
