"""Read on PDFs (pypdf) and images (Pillow), with real files made in tmp: the ``pages`` parameter and its
texts, the long-PDF refusal, encrypted and damaged PDFs; images fitted to the API's limits (long edge
≤ 1568 px, ≤ 5 MB of base64), small ones sent byte for byte, JPEG re-encoding, GIF, WebP, EXIF
orientation, corrupt files; the event loop kept free; and one real CLI turn against the fake Anthropic
server whose request carries the downscaled image block and a PDF page's text."""

from __future__ import annotations

import asyncio
import base64
import io
import json

import pytest
from PIL import Image

from desktop_agent.engine.execution import run_tool_use
from desktop_agent.tools.read import media as read_mod
from tests.engine.helpers import ctx_with, tool_use
from tests.fakes.anthropic_server import FakeAnthropic, reply, text
from tests.fakes.anthropic_server import tool_use as model_tool_use
from tests.test_cli import cli_env, run_cli
from tests.tools.media_files import gradient_image, noise_image, page_text, write_pdf
from tests.tools.util import Ticker, tools

WRAP = "<tool_use_error>{}</tool_use_error>"
OPEN = "<tool_use_error>"


@pytest.fixture
def ctx(tmp_path):
    return ctx_with(tools(), tmp_path)


def read(ctx, path, **kw):
    return asyncio.run(run_tool_use(tool_use("Read", {"file_path": str(path), **kw}, "toolu_m"), ctx))


def pages_block(*numbers: int) -> str:
    return "\n\n".join(f'<page number="{n}">\n{page_text(n)}\n</page>' for n in numbers)


def decoded(block: dict) -> Image.Image:
    return Image.open(io.BytesIO(base64.b64decode(block["source"]["data"])))


# ---------------------------------------------------------------- PDFs


@pytest.fixture
def three_pages(tmp_path):
    return write_pdf(tmp_path / "doc.pdf", [page_text(n) for n in (1, 2, 3)])


def test_pdf_page_ranges(ctx, three_pages):
    out = read(ctx, three_pages, pages="2-3")
    assert not out.is_error
    assert out.block["content"] == pages_block(2, 3)
    assert read(ctx, three_pages, pages="3").block["content"] == pages_block(3)
    assert read(ctx, three_pages, pages=" 1 - 2 ").block["content"] == pages_block(1, 2)
    whole = read(ctx, three_pages)
    assert whole.block["content"] == pages_block(1, 2, 3)
    # PDFs are exempt from the file_unchanged stub
    assert read(ctx, three_pages).block["content"] == pages_block(1, 2, 3)
    assert whole.data["file"]["totalPages"] == 3


def test_pdf_range_past_the_end(ctx, three_pages):
    assert read(ctx, three_pages, pages="2-10").block["content"] == pages_block(2, 3)
    out = read(ctx, three_pages, pages="5-6")
    assert out.is_error
    assert out.block["content"] == WRAP.format('Page range "5-6" is out of range: this PDF has 3 pages.')


def test_pdf_invalid_ranges_give_the_reference_texts(ctx, three_pages):
    for bad in ("abc", "0", "0-3", "5-3", "1,3", "-2", ""):
        out = read(ctx, three_pages, pages=bad)
        assert out.is_error
        assert out.block["content"] == WRAP.format(
            f'Invalid pages parameter: "{bad}". Use formats like "1-5", "3", or "10-20". Pages are 1-indexed.'), bad
    for too_many in ("1-21", "10-", "5-30"):
        out = read(ctx, three_pages, pages=too_many)
        assert out.block["content"] == WRAP.format(
            f'Page range "{too_many}" exceeds maximum of 20 pages per request. Please use a smaller range.')


def test_long_pdf_needs_pages(ctx, tmp_path):
    pdf = write_pdf(tmp_path / "long.pdf", [page_text(n) for n in range(1, 26)])
    out = read(ctx, pdf)
    assert out.is_error
    assert out.block["content"] == WRAP.format(
        'This PDF has 25 pages, which is too many to read at once. Use the pages parameter to read specific page '
        'ranges (e.g., pages: "1-5"). Maximum 20 pages per request.')
    window = read(ctx, pdf, pages="6-25")  # 20 pages: the most one request may ask for
    assert window.block["content"] == pages_block(*range(6, 26))
    # exactly 20 pages still read whole
    twenty = write_pdf(tmp_path / "twenty.pdf", [page_text(n) for n in range(1, 21)])
    assert read(ctx, twenty).block["content"] == pages_block(*range(1, 21))


def test_pdf_without_text_says_so(ctx, tmp_path):
    pdf = write_pdf(tmp_path / "scan.pdf", ["", ""])
    assert read(ctx, pdf).block["content"] == (
        "<system-reminder>Warning: the PDF has no extractable text in this range (its pages may be scanned "
        "images).</system-reminder>")


def test_encrypted_pdf(ctx, tmp_path):
    locked = write_pdf(tmp_path / "locked.pdf", [page_text(1)], user_password="secret")
    out = read(ctx, locked)
    assert out.is_error
    assert out.block["content"] == WRAP.format(
        f"Cannot read PDF {locked}: it is encrypted with a password. Ask the user for a decrypted copy (for "
        "example: qpdf --decrypt --password=... in.pdf out.pdf).")
    # an owner password alone (no password to open it) does not stop reading
    owner_only = write_pdf(tmp_path / "owner.pdf", [page_text(1)], owner_password="owner")
    assert read(ctx, owner_only).block["content"] == pages_block(1)


def test_damaged_pdf(ctx, tmp_path, three_pages):
    for name, data in (("garbage.pdf", b"this is not a pdf at all\n" * 10), ("empty.pdf", b""),
                       ("cut.pdf", three_pages.read_bytes()[:200])):
        (tmp_path / name).write_bytes(data)
        out = read(ctx, tmp_path / name)
        assert out.is_error, name
        assert out.block["content"].startswith(
            f"{OPEN}Cannot read PDF {tmp_path / name}: the file is damaged or is not a PDF ("), out.block["content"]


def test_pdf_token_cap(ctx, tmp_path, monkeypatch):
    monkeypatch.setenv("CLAUDE_CODE_FILE_READ_MAX_OUTPUT_TOKENS", "20")
    pdf = write_pdf(tmp_path / "dense.pdf", [page_text(1, lines=10)])
    out = read(ctx, pdf)
    assert out.is_error
    assert out.block["content"].startswith("PDF text (")
    assert out.block["content"].endswith(
        "exceeds maximum allowed tokens (20). Use the pages parameter to read fewer pages at a time.")


# ---------------------------------------------------------------- images


def test_large_png_is_downscaled_within_the_api_limits(ctx, tmp_path):
    path = tmp_path / "shot.png"
    gradient_image(4000, 3000).save(path)
    out = read(ctx, path)
    assert not out.is_error
    image, note = out.block["content"]
    assert image["source"]["media_type"] == "image/png"  # a PNG that fits after scaling stays PNG
    assert len(image["source"]["data"]) <= 5 * 1024 * 1024
    with decoded(image) as img:
        assert img.format == "PNG" and img.size == (1568, 1176)
    assert note == {"type": "text", "text": "[Image: original 4000x3000, displayed at 1568x1176. Multiply "
                                            "coordinates by 2.55 to map to original image.]"}
    assert out.data["file"]["dimensions"] == {"originalWidth": 4000, "originalHeight": 3000,
                                              "displayWidth": 1568, "displayHeight": 1176}


def test_small_png_is_sent_byte_for_byte(ctx, tmp_path):
    path = tmp_path / "small.png"
    gradient_image(800, 600).save(path)
    out = read(ctx, path)
    assert out.block["content"] == [{"type": "image", "source": {
        "type": "base64", "data": base64.b64encode(path.read_bytes()).decode(), "media_type": "image/png"}}]
    edge = tmp_path / "edge.png"  # exactly the long-edge limit: still untouched
    gradient_image(1568, 400).save(edge)
    assert read(ctx, edge).block["content"][0]["source"]["data"] == base64.b64encode(edge.read_bytes()).decode()


def test_noisy_image_needs_jpeg(ctx, tmp_path):
    path = tmp_path / "noise.png"
    noise_image(3000, 2250).save(path, compress_level=1)  # ~20 MB; even at 1568 px its PNG is ~5.5 MB
    out = read(ctx, path)
    assert not out.is_error
    image = out.block["content"][0]
    assert image["source"]["media_type"] == "image/jpeg"
    assert len(image["source"]["data"]) <= 5 * 1024 * 1024
    with decoded(image) as img:
        assert img.format == "JPEG" and max(img.size) <= 1568


def test_small_but_heavy_png_is_reencoded(ctx, tmp_path, monkeypatch):
    monkeypatch.setattr(read_mod, "MAX_IMAGE_RAW_BYTES", 200_000)  # the byte limit alone forces re-encoding
    path = tmp_path / "heavy.png"
    noise_image(400, 300).save(path)  # ~360 KB, within the pixel limit
    out = read(ctx, path)
    image = out.block["content"][0]
    assert image["source"]["media_type"] == "image/jpeg"
    assert len(base64.b64decode(image["source"]["data"])) <= 200_000
    with decoded(image) as img:
        assert img.size == (400, 300)


def test_animated_gif(ctx, tmp_path):
    frames = [Image.new("RGB", (2400, 1200), c) for c in ((255, 0, 0), (0, 255, 0), (0, 0, 255))]
    big = tmp_path / "anim.gif"
    frames[0].save(big, save_all=True, append_images=frames[1:], duration=100, loop=0)
    out = read(ctx, big)
    image = out.block["content"][0]
    assert image["source"]["media_type"] == "image/png"  # its first frame, scaled
    with decoded(image) as img:
        assert img.size == (1568, 784)
        assert img.convert("RGB").getpixel((10, 10)) == (255, 0, 0)
    small = tmp_path / "small.gif"
    frames_small = [f.resize((60, 30)) for f in frames]
    frames_small[0].save(small, save_all=True, append_images=frames_small[1:], duration=100, loop=0)
    assert read(ctx, small).block["content"] == [{"type": "image", "source": {
        "type": "base64", "data": base64.b64encode(small.read_bytes()).decode(), "media_type": "image/gif"}}]


def test_webp_and_jpeg_keep_their_kind(ctx, tmp_path):
    webp = tmp_path / "pic.webp"
    gradient_image(3000, 1000).save(webp, quality=80)
    image = read(ctx, webp).block["content"][0]
    assert image["source"]["media_type"] == "image/webp"
    with decoded(image) as img:
        assert img.format == "WEBP" and img.size == (1568, 523)
    jpeg = tmp_path / "photo.jpg"
    gradient_image(4000, 3000).save(jpeg, quality=90)
    image = read(ctx, jpeg).block["content"][0]
    assert image["source"]["media_type"] == "image/jpeg"
    with decoded(image) as img:
        assert img.format == "JPEG" and img.size == (1568, 1176)


def test_exif_orientation_is_applied_when_scaling(ctx, tmp_path):
    path = tmp_path / "portrait.jpg"
    exif = Image.Exif()
    exif[0x0112] = 6  # stored landscape, shown rotated 90° (a phone held upright)
    gradient_image(4000, 3000).save(path, quality=85, exif=exif.tobytes())
    out = read(ctx, path)
    with decoded(out.block["content"][0]) as img:
        assert img.size == (1176, 1568)


def test_format_the_api_does_not_take_becomes_png(ctx, tmp_path):
    path = tmp_path / "really_bmp.png"
    gradient_image(300, 200).save(path, format="BMP")
    image = read(ctx, path).block["content"][0]
    assert image["source"]["media_type"] == "image/png"
    with decoded(image) as img:
        assert img.format == "PNG" and img.size == (300, 200)


def test_corrupt_images_are_errors(ctx, tmp_path):
    good = tmp_path / "good.jpg"
    gradient_image(640, 480).save(good, quality=90)
    cases = {
        "garbage.png": b"\x89PNG\r\n\x1a\n" + b"not really a png" * 20,
        "text.jpg": b"hello, I am text in a .jpg\n" * 10,
        "cut.jpg": good.read_bytes()[: good.stat().st_size // 2],
    }
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        out = read(ctx, tmp_path / name)
        assert out.is_error, name
        expected = (f"{OPEN}Could not read image {tmp_path / name}: "
                    "it is corrupt or not a PNG, JPEG, GIF or WebP image (")
        assert out.block["content"].startswith(expected), name
    empty = tmp_path / "empty.png"
    empty.write_bytes(b"")
    assert read(ctx, empty).block["content"] == WRAP.format(f"Image file is empty: {empty}")


def test_decompression_bomb_is_refused_before_decoding(ctx, tmp_path):
    path = tmp_path / "bomb.png"
    Image.new("1", (20_000, 10_000)).save(path)  # 200 MP in a few KB: over Pillow's safety limit
    assert path.stat().st_size < 100_000
    out = read(ctx, path)
    assert out.is_error
    assert out.block["content"].startswith(f"{OPEN}Image {path} has too many pixels to decode safely (")


def test_media_reads_keep_the_loop_free(ctx, tmp_path):
    photo = tmp_path / "photo.jpg"
    noise_image(4000, 3000).save(photo, quality=92)  # 12 MP
    pdf = write_pdf(tmp_path / "twenty.pdf", [page_text(n, lines=40) for n in range(1, 21)])

    async def main():
        results = []
        for path in (photo, pdf):
            async with Ticker() as ticker:
                out = await run_tool_use(tool_use("Read", {"file_path": str(path)}, "toolu_t"), ctx)
            results.append((out, ticker.ticks))
        return results

    (image_out, image_ticks), (pdf_out, pdf_ticks) = asyncio.run(main())
    assert not image_out.is_error and not pdf_out.is_error
    assert pdf_out.block["content"].count("<page number=") == 20
    assert image_ticks >= 3 and pdf_ticks >= 3, (image_ticks, pdf_ticks)


# ---------------------------------------------------------------- through the real CLI


def test_cli_request_carries_the_downscaled_image_and_pdf_text(tmp_path):
    work = tmp_path / "w"
    work.mkdir()
    shot = work / "shot.png"
    gradient_image(4000, 3000).save(shot)
    pdf = write_pdf(work / "doc.pdf", [page_text(n) for n in (1, 2, 3)])
    with FakeAnthropic() as fake:
        fake.script([
            reply(model_tool_use("Read", {"file_path": str(shot)}, id="toolu_img"),
                  model_tool_use("Read", {"file_path": str(pdf), "pages": "2"}, id="toolu_pdf")),
            reply(text("The screenshot is blue-green and page 2 says hello.")),
        ])
        out = run_cli(["-p", "Look at shot.png and page 2 of doc.pdf", "--output-format", "json"], work,
                      cli_env(fake, tmp_path / "h"))
        assert out.returncode == 0, out.stderr
        fake.assert_done()
        results = {b["tool_use_id"]: b for b in fake.requests[1].messages[-1]["content"]
                   if b.get("type") == "tool_result"}
    assert json.loads(out.stdout)["result"] == "The screenshot is blue-green and page 2 says hello."
    image_result = results["toolu_img"]
    assert not image_result.get("is_error")
    image, note = image_result["content"]
    assert image["type"] == "image" and image["source"]["type"] == "base64"
    assert image["source"]["media_type"] == "image/png"
    assert len(image["source"]["data"]) <= 5 * 1024 * 1024
    with decoded(image) as img:
        assert img.size == (1568, 1176)
    assert note["text"].startswith("[Image: original 4000x3000, displayed at 1568x1176.")
    pdf_result = results["toolu_pdf"]
    assert not pdf_result.get("is_error")
    content = pdf_result["content"]
    text_of = content if isinstance(content, str) else "".join(b.get("text", "") for b in content)
    assert text_of == pages_block(2)
