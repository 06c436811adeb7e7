"""Jupyter notebooks for the model: cells with their outputs (text, images), ANSI escapes stripped."""

from __future__ import annotations

import json
import re
from typing import Any

from desktop_agent.core.errors import ToolError
from desktop_agent.util import fileio

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def read_notebook(text: str) -> list[dict[str, Any]]:
    """Cells with their outputs: ``[{cell_id, cell_type, source, language, outputs:[{text|image}]}]``."""
    try:
        nb = json.loads(text)
    except ValueError as exc:
        raise ToolError(f"Notebook is not valid JSON: {exc}") from exc
    language = (nb.get("metadata", {}).get("language_info", {}) or {}).get("name") or "python"
    cells = []
    for index, cell in enumerate(nb.get("cells", [])):
        source = cell.get("source", "")
        if isinstance(source, list):
            source = "".join(source)
        outputs: list[dict[str, Any]] = []
        for output in cell.get("outputs", []) or []:
            outputs.extend(_notebook_output(output))
        cells.append({
            "cell_id": cell.get("id") or f"cell-{index}",
            "cell_type": cell.get("cell_type", "code"),
            "source": source,
            "language": language,
            "execution_count": cell.get("execution_count"),
            "outputs": outputs,
        })
    return cells


def _join(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value or "")


def _notebook_output(output: dict[str, Any]) -> list[dict[str, Any]]:
    kind = output.get("output_type")
    if kind == "stream":
        return [{"text": _join(output.get("text"))}]
    if kind in ("execute_result", "display_data"):
        data = output.get("data", {}) or {}
        out: list[dict[str, Any]] = []
        if "text/plain" in data:
            out.append({"text": _join(data["text/plain"])})
        for media in ("image/png", "image/jpeg"):
            if media in data:
                out.append({"image": {"media_type": media, "data": _join(data[media]).replace("\n", "")}})
                break
        return out
    if kind == "error":
        tb = "\n".join(output.get("traceback", []) or [])
        return [{"text": _ANSI.sub("", f"{output.get('ename', '')}: {output.get('evalue', '')}\n{tb}").strip()}]
    return []


def cell_blocks(cell: dict[str, Any]) -> list[dict[str, Any]]:
    cid = cell["cell_id"]
    meta = ""
    if cell["cell_type"] != "code":
        meta += f"<cell_type>{cell['cell_type']}</cell_type>"
    elif cell["language"] != "python":
        meta += f"<language>{cell['language']}</language>"
    blocks: list[dict[str, Any]] = [
        {"type": "text", "text": f'<cell id="{cid}">{meta}{fileio.to_display(cell["source"])}</cell id="{cid}">'}]
    for out in cell["outputs"]:
        if "text" in out:
            blocks.append({"type": "text", "text": fileio.to_display(out["text"])})
        else:
            img = out["image"]
            blocks.append({"type": "image", "source": {"type": "base64", "media_type": img["media_type"],
                                                       "data": img["data"]}})
    return blocks


# ---------------------------------------------------------------- worker-thread jobs
