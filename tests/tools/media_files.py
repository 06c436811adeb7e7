"""Real media files for the Read tests and bench: PDFs written with pypdf (pages whose text is drawn by
a small content stream in Helvetica, so pypdf can extract it back), images written with Pillow."""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

from pypdf import PdfWriter
from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject


def _pdf_escape(line: str) -> str:
    return line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def pdf_bytes(pages: list[str], user_password: str | None = None, owner_password: str | None = None) -> bytes:
    """A PDF with one page per item of ``pages`` (``""`` draws nothing: a page without text);
    encrypted (RC4, no extra library needed) when a password is given."""
    writer = PdfWriter()
    font = DictionaryObject({NameObject("/Type"): NameObject("/Font"), NameObject("/Subtype"): NameObject("/Type1"),
                             NameObject("/BaseFont"): NameObject("/Helvetica")})
    for text in pages:
        page = writer.add_blank_page(612, 792)
        page[NameObject("/Resources")] = DictionaryObject(
            {NameObject("/Font"): DictionaryObject({NameObject("/F1"): font})})
        ops = ["BT /F1 11 Tf 14 TL 72 740 Td"]
        ops += [f"({_pdf_escape(line)}) Tj T*" for line in text.split("\n")] if text else []
        ops.append("ET")
        stream = DecodedStreamObject()
        stream.set_data("\n".join(ops).encode("latin-1"))
        page[NameObject("/Contents")] = writer._add_object(stream)
    if user_password is not None or owner_password is not None:
        writer.encrypt(user_password or "", owner_password, algorithm="RC4-128")
    buf = io.BytesIO()
    writer.write(buf)
    return buf.getvalue()


def write_pdf(path: Path, pages: list[str], **kw: Any) -> Path:
    path.write_bytes(pdf_bytes(pages, **kw))
    return path


def page_text(n: int, lines: int = 3) -> str:
    """Recognisable text for page ``n``: ``Page n`` then ``lines`` lines naming the page."""
    return "\n".join([f"Page {n}"] + [f"line {j} of page {n}: the quick brown fox" for j in range(1, lines + 1)])


def noise_image(width: int, height: int, mode: str = "RGB") -> Any:
    """Random pixels: incompressible, so PNG stays huge and only JPEG gets it under the API's limit."""
    from PIL import Image

    bands = len(mode)
    return Image.frombytes(mode, (width, height), os.urandom(width * height * bands))


def gradient_image(width: int, height: int) -> Any:
    """A smooth photo-like image (compresses well), made fast: a small gradient scaled up."""
    from PIL import Image

    small = Image.new("RGB", (64, 48))
    small.putdata([(x * 4, y * 5, (x + y) * 2) for y in range(48) for x in range(64)])
    return small.resize((width, height), Image.Resampling.BILINEAR)
