"""Images and PDFs for the model: images fitted to the API's limits with Pillow (long edge ≤ 1568 px, ≤ 5 MB of
base64; re-encoded, JPEG at falling qualities if need be), PDFs as the text of their pages through pypdf
(``pages``, at most 20 a request)."""

from __future__ import annotations

import base64
import io
import os
import re
from typing import Any

from desktop_agent.core.errors import ToolError
from desktop_agent.tools.read.files import Guard, open_regular, run_cpu, run_io
from desktop_agent.tools.read.text import estimate_tokens, max_output_tokens
from desktop_agent.util import fileio

PDF_MAX_PAGES_PER_READ = 20
# A PDF read without ``pages`` may have at most this many pages (the reference's
# PDF_AT_MENTION_INLINE_THRESHOLD is 10; we send text, not page images, and the prompt says 20).
PDF_INLINE_MAX_PAGES = 20
PDF_MAX_FILE_BYTES = 100 * 1024 * 1024  # the reference's PDF_MAX_EXTRACT_SIZE
# Images, as the Messages API takes them: at most 8000x8000 px and 5 MB of base64 each. It downscales
# any image whose long edge is over 1568 px itself, so we send at most that: fewer bytes, same tokens.
MAX_IMAGE_BASE64_BYTES = 5 * 1024 * 1024
MAX_IMAGE_RAW_BYTES = MAX_IMAGE_BASE64_BYTES * 3 // 4
API_MAX_IMAGE_DIMENSION = 8000
MAX_IMAGE_DIMENSION = 1568
JPEG_QUALITIES = (85, 70, 55, 40, 25)  # re-encoding steps when the image's own format is too large
MAX_IMAGE_FILE_BYTES = 100 * 1024 * 1024  # larger files are not read into memory at all


def parse_pdf_page_range(pages: str) -> tuple[int, int | None] | None:
    """``"3"`` → (3, 3), ``"1-5"`` → (1, 5), ``"10-"`` → (10, None); None when malformed."""
    text = pages.strip()
    m = re.fullmatch(r"(\d+)(?:\s*-\s*(\d*))?", text)
    if not m:
        return None
    first = int(m.group(1))
    if first < 1:
        return None
    if m.group(2) is None:
        return first, first
    if m.group(2) == "":
        return first, None
    last = int(m.group(2))
    if last < first:
        return None
    return first, last


def _image_media_type(data: bytes, ext: str) -> str:
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
            ".webp": "image/webp"}.get(ext, "image/png")


def read_image(path: str, guard: Guard | None = None) -> dict[str, Any]:
    """An image as base64 within the API's limits (worker thread).

    With Pillow (a dependency) the image is decoded in full, so a corrupt or truncated file is an error
    here rather than a request the API rejects; one that fits (long edge ≤ ``MAX_IMAGE_DIMENSION``,
    ≤ ``MAX_IMAGE_RAW_BYTES``, a format the API takes) is sent byte for byte, any other is downscaled
    and re-encoded (``fit_image``). Without Pillow the bytes go as they are if they are small enough.
    """
    with open_regular(path, guard) as fh:
        size = os.fstat(fh.fileno()).st_size
        if size > MAX_IMAGE_FILE_BYTES:
            raise ToolError(
                f"Image file is too large to read ({fileio.format_file_size(size)}); the maximum is "
                f"{fileio.format_file_size(MAX_IMAGE_FILE_BYTES)}. Resize or compress it first (for example "
                "with ImageMagick: convert in.png -resize 50% out.png) and read the smaller copy.")
        data = fh.read()
    if not data:
        raise ToolError(f"Image file is empty: {path}")
    media_type = _image_media_type(data, fileio.extension(path))
    original_size = len(data)
    dimensions: dict[str, int] | None = None
    try:
        import PIL.Image  # noqa: F401 - a dependency; a broken install still sends small images
        have_pillow = True
    except ImportError:
        have_pillow = False
    if have_pillow:
        data, media_type, dimensions = fit_image(data, path)
    if len(data) > MAX_IMAGE_RAW_BYTES:
        how = ("Downscaling did not bring it under the limit." if have_pillow else
               "Pillow is not installed, so the image cannot be downscaled.")
        raise ToolError(
            f"Image file is too large to read ({fileio.format_file_size(len(data))}); the maximum is "
            f"{fileio.format_file_size(MAX_IMAGE_RAW_BYTES)}. {how} Resize or compress it first (for example "
            f"with ImageMagick: convert in.png -resize 50% out.png) and read the smaller copy.")
    return {
        "type": "image",
        "file": {"base64": base64.b64encode(data).decode("ascii"), "type": media_type,
                 "originalSize": original_size, "dimensions": dimensions},
    }


# Pillow's format names the API takes as they are (MPO: the multi-picture JPEG many cameras write).
_API_FORMATS = {"PNG": "image/png", "JPEG": "image/jpeg", "MPO": "image/jpeg", "GIF": "image/gif",
                "WEBP": "image/webp"}


def fit_image(data: bytes, path: str) -> tuple[bytes, str, dict[str, int]]:
    """``(bytes, media_type, dimensions)`` for an image the API accepts, with Pillow.

    Kept byte for byte when it fits. Otherwise scaled so its long edge is at most
    ``MAX_IMAGE_DIMENSION`` (never enlarged; EXIF orientation applied; a GIF's first frame) and
    encoded in its own kind (PNG for PNG, GIF and formats the API does not take, JPEG for JPEG, WebP
    for WebP); if that is over ``MAX_IMAGE_RAW_BYTES``, JPEG at falling qualities, then at half the
    size, until it fits.
    """
    from PIL import Image, ImageOps

    try:
        img = Image.open(io.BytesIO(data))
    except Image.DecompressionBombError as exc:
        raise ToolError(f"Image {path} has too many pixels to decode safely ({exc}).") from None
    except Exception as exc:  # UnidentifiedImageError, SyntaxError, ValueError, ...
        raise ToolError(_bad_image_message(path, exc)) from None
    with img:
        fmt = img.format or ""
        width, height = img.size
        dims = {"originalWidth": width, "originalHeight": height, "displayWidth": width, "displayHeight": height}
        scale = min(1.0, MAX_IMAGE_DIMENSION / max(width, height, 1))
        target = (max(1, round(width * scale)), max(1, round(height * scale)))
        try:
            if fmt in ("JPEG", "MPO") and scale < 1.0:
                img.draft("RGB", target)  # the decoder scales by 1/2, 1/4 or 1/8 first: far less work
            img.load()  # the whole first frame: a truncated or corrupt file fails here, not at the API
            if fmt in _API_FORMATS and len(data) <= MAX_IMAGE_RAW_BYTES and scale == 1.0:
                return data, _API_FORMATS[fmt], dims
            frame = ImageOps.exif_transpose(img) or img
        except Exception as exc:
            raise ToolError(_bad_image_message(path, exc)) from None
        if frame.size != img.size and frame.size == (img.height, img.width):
            target = (target[1], target[0])  # rotated by its EXIF orientation
        frame = _normalize_mode(frame)
        first = {"JPEG": "JPEG", "MPO": "JPEG", "WEBP": "WEBP"}.get(fmt, "PNG")
        size = target
        while True:
            resized = frame if frame.size == size else frame.resize(size, Image.Resampling.LANCZOS,
                                                                    reducing_gap=3.0)
            steps = [(first, 85)] + [("JPEG", q) for q in JPEG_QUALITIES if not (first == "JPEG" and q == 85)]
            for out_format, quality in steps:
                out = _encode(resized, out_format, quality)
                if len(out) <= MAX_IMAGE_RAW_BYTES:
                    dims.update(displayWidth=size[0], displayHeight=size[1])
                    return out, _API_FORMATS[out_format], dims
            if size == (1, 1):
                raise ToolError(f"Image {path} could not be brought under the API's size limit.")
            size = (max(1, size[0] // 2), max(1, size[1] // 2))


def _bad_image_message(path: str, exc: BaseException) -> str:
    detail = str(exc).strip() or type(exc).__name__
    return (f"Could not read image {path}: it is corrupt or not a PNG, JPEG, GIF or WebP image ({detail}).")


def _normalize_mode(img: Any) -> Any:
    """RGB, RGBA, L or LA: modes every encoder and LANCZOS handle (palette, 16-bit, CMYK converted)."""
    if img.mode in ("RGB", "RGBA", "L", "LA"):
        return img
    has_alpha = img.mode in ("PA", "RGBa", "La") or "transparency" in img.info or img.mode.endswith("A")
    if img.mode.startswith("I;16") or img.mode in ("I", "F"):
        return img.convert("I").point(lambda v: v / 256).convert("L") if img.mode != "F" else img.convert("L")
    return img.convert("RGBA" if has_alpha else "RGB")


def _encode(img: Any, out_format: str, quality: int) -> bytes:
    buf = io.BytesIO()
    if out_format == "JPEG":
        if img.mode in ("RGBA", "LA"):  # no alpha in JPEG: flatten onto white, as a viewer shows it
            from PIL import Image

            background = Image.new("RGB", img.size, (255, 255, 255))
            background.paste(img.convert("RGBA"), mask=img.convert("RGBA").getchannel("A"))
            img = background
        img.save(buf, format="JPEG", quality=quality, optimize=False)
    elif out_format == "WEBP":
        img.save(buf, format="WEBP", quality=quality, method=4)
    else:
        img.save(buf, format="PNG", compress_level=6)
    return buf.getvalue()


def image_metadata_text(dims: dict[str, int] | None) -> str | None:
    """The reference's ``createImageMetadataText`` for a resized image; None when it was sent as it is."""
    if not dims:
        return None
    ow, oh = dims.get("originalWidth"), dims.get("originalHeight")
    dw, dh = dims.get("displayWidth"), dims.get("displayHeight")
    if not ow or not oh or not dw or not dh or (ow, oh) == (dw, dh):
        return None
    return (f"[Image: original {ow}x{oh}, displayed at {dw}x{dh}. Multiply coordinates by {ow / dw:.2f} to map "
            "to original image.]")


# ---------------------------------------------------------------- PDFs (pypdf)


def read_pdf_bytes(path: str, guard: Guard | None = None) -> bytes:
    """The PDF's bytes (I/O thread), refusing one over ``PDF_MAX_FILE_BYTES``."""
    with open_regular(path, guard) as fh:
        size = os.fstat(fh.fileno()).st_size
        if size > PDF_MAX_FILE_BYTES:
            raise ToolError(
                f"PDF file is too large to read ({fileio.format_file_size(size)}); the maximum is "
                f"{fileio.format_file_size(PDF_MAX_FILE_BYTES)}. Split it or extract its text with another "
                "tool through Bash.")
        return fh.read()


def extract_pdf_pages(data: bytes, path: str, pages: str | None, max_tokens: int) -> dict[str, Any]:
    """The text of a page range (or of the whole PDF if it has at most ``PDF_INLINE_MAX_PAGES`` pages),
    with pypdf (CPU thread). Encrypted PDFs that an empty password does not open, and damaged ones,
    are errors that say so."""
    import logging

    from pypdf import PdfReader

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # its recoverable-damage warnings are not ours
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            try:
                opened = bool(reader.decrypt(""))  # a PasswordType: 0 when the empty password does not open it
            except Exception:  # pypdf's DependencyError for AES without a crypto library, and others
                opened = False
            if not opened:
                raise ToolError(
                    f"Cannot read PDF {path}: it is encrypted with a password. Ask the user for a decrypted "
                    "copy (for example: qpdf --decrypt --password=... in.pdf out.pdf).")
        total = len(reader.pages)
    except ToolError:
        raise
    except Exception as exc:
        detail = str(exc).strip() or type(exc).__name__
        raise ToolError(f"Cannot read PDF {path}: the file is damaged or is not a PDF ({detail}).") from None
    if pages is None:
        if total > PDF_INLINE_MAX_PAGES:
            raise ToolError(
                f"This PDF has {total} pages, which is too many to read at once. Use the pages parameter "
                f'to read specific page ranges (e.g., pages: "1-5"). Maximum {PDF_MAX_PAGES_PER_READ} pages per '
                "request.")
        first, last = 1, total
    else:
        parsed = parse_pdf_page_range(pages)
        assert parsed is not None and parsed[1] is not None  # validate_input checked it
        first, last = parsed[0], parsed[1]
        if first > total:
            raise ToolError(
                f'Page range "{pages}" is out of range: this PDF has {total} page{"" if total == 1 else "s"}.')
        last = min(last, total)
    out: list[dict[str, Any]] = []
    for number in range(first, last + 1):
        try:
            text = reader.pages[number - 1].extract_text() or ""
        except Exception as exc:
            text = f"(the text of this page could not be extracted: {str(exc).strip() or type(exc).__name__})"
        out.append({"page": number, "text": text.replace("\x00", "").rstrip()})
    tokens = estimate_tokens("".join(p["text"] for p in out))
    if tokens > max_tokens:
        raise ToolError(
            f"PDF text ({tokens} tokens) exceeds maximum allowed tokens ({max_tokens}). Use the pages parameter "
            "to read fewer pages at a time.", wrap=False)
    return {"type": "pdf", "file": {"filePath": path, "pages": out, "totalPages": total}}


async def read_pdf(path: str, pages: str | None, guard: Guard | None = None) -> dict[str, Any]:
    """Read a PDF off the event loop: bytes on the I/O pool, pypdf (pure Python) on the CPU thread."""
    data = await run_io(read_pdf_bytes, path, guard)
    return await run_cpu(extract_pdf_pages, data, path, pages, max_output_tokens())
