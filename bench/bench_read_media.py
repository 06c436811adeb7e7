"""Benchmarks for Read on media (by hand: ``.venv/bin/python bench/bench_read_media.py``; or ``bench/run``).

Each case is one Read through ``run_tool_use`` (validation, permission, the worker-thread job, the
mapping to the tool_result), timed wall-clock, while a 1 ms ticker runs on the same event loop; the
longest gap between its ticks (less the 1 ms sleep) is the longest stall the loop (the GUI's) saw.

1. A 20-page PDF made with pypdf (40 lines of text a page): pypdf's text extraction, pure Python,
   on the CPU thread. Also a real PDF from /usr/share/doc (pages 1-20) when the machine has one.
2. A 12 MP (4000x3000) photo-like JPEG: decoded at reduced size (JPEG draft), scaled to 1568 px, JPEG.
3. A 12 MP JPEG of random pixels (the worst case for the decoder: ~15 MB of entropy).
4. A 12 MP PNG screenshot-like image: full PNG decode, LANCZOS scaling, PNG encode.

Targets: each Read ≤ 1.5 s median; loop stall ≤ 50 ms median. The last line is ``BENCH_JSON [...]``.
"""

from __future__ import annotations

import asyncio
import glob
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import report, result  # noqa: E402
from PIL import Image  # noqa: E402

from desktop_agent.core.context import ToolUseContext  # noqa: E402
from desktop_agent.engine.execution import run_tool_use  # noqa: E402
from desktop_agent.permissions.context import PermissionContext  # noqa: E402
from desktop_agent.tools.read.tool import ReadTool  # noqa: E402
from tests.tools.media_files import gradient_image, noise_image, page_text, write_pdf  # noqa: E402

REPEAT = 5


async def one_read(ctx: ToolUseContext, inp: dict) -> tuple[float, float, bool]:
    """(elapsed s, longest loop stall s, is_error)."""
    stop = False
    stall = 0.0

    async def ticker() -> None:
        nonlocal stall
        last = time.perf_counter()
        while not stop:
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            stall = max(stall, now - last - 0.001)
            last = now

    task = asyncio.ensure_future(ticker())
    await asyncio.sleep(0)
    t0 = time.perf_counter()
    out = await run_tool_use({"type": "tool_use", "id": "toolu_b", "name": "Read", "input": inp}, ctx)
    elapsed = time.perf_counter() - t0
    stop = True
    await task
    return elapsed, stall, out.is_error


def bench_case(ctx: ToolUseContext, label: str, inp: dict) -> list[dict]:
    async def main() -> list[tuple[float, float, bool]]:
        await one_read(ctx, inp)  # warm-up (imports, page cache)
        return [await one_read(ctx, inp) for _ in range(REPEAT)]

    runs = asyncio.run(main())
    assert not any(r[2] for r in runs), f"{label}: Read failed"
    times, stalls = [r[0] for r in runs], [r[1] for r in runs]
    print(f"{label}: Read median {statistics.median(times) * 1000:.0f} ms, longest loop stall median "
          f"{statistics.median(stalls) * 1000:.1f} ms (max {max(stalls) * 1000:.1f} ms)")
    return [result(f"Read {label}", times, unit="ms", scale=1000, target=1500),
            result(f"loop stall during Read {label}", stalls, unit="ms", scale=1000, target=50)]


def main() -> None:
    items: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        ctx = ToolUseContext(cwd=tmp, tools=[ReadTool()],
                             permission_context=PermissionContext(tmp, mode="bypassPermissions"))
        pdf = write_pdf(root / "twenty.pdf", [page_text(n, lines=40) for n in range(1, 21)])
        items += bench_case(ctx, "20-page PDF (pypdf-made)", {"file_path": str(pdf)})
        real = sorted(glob.glob("/usr/share/doc/**/*.pdf", recursive=True), key=lambda p: -Path(p).stat().st_size)
        if real:
            print(f"  real PDF: {real[0]} ({Path(real[0]).stat().st_size // 1024} KB)")
            items += bench_case(ctx, "20 pages of a real PDF", {"file_path": real[0], "pages": "1-20"})
        photo = root / "photo.jpg"
        Image.blend(gradient_image(4000, 3000), noise_image(4000, 3000), 0.12).save(photo, quality=90)
        print(f"  photo.jpg: {photo.stat().st_size / 1e6:.1f} MB")
        items += bench_case(ctx, "12 MP photo JPEG", {"file_path": str(photo)})
        noisy = root / "noise.jpg"
        noise_image(4000, 3000).save(noisy, quality=92)
        print(f"  noise.jpg: {noisy.stat().st_size / 1e6:.1f} MB")
        items += bench_case(ctx, "12 MP random-pixel JPEG", {"file_path": str(noisy)})
        shot = root / "shot.png"
        gradient_image(4000, 3000).save(shot)
        print(f"  shot.png: {shot.stat().st_size / 1e6:.1f} MB")
        items += bench_case(ctx, "12 MP PNG", {"file_path": str(shot)})
    report(items)


if __name__ == "__main__":
    main()
