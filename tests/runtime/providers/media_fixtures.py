"""Reading images and documents out of recorded requests, and comparing request shapes."""

from __future__ import annotations

import base64
import copy
import io
from typing import Any

from PIL import Image

DATA = "<data>"


def _decode(data: str) -> bytes:
    if "-" in data or "_" in data:  # Gemini recordings use URL-safe base64
        return base64.urlsafe_b64decode(data + "=" * (-len(data) % 4))
    return base64.b64decode(data)


def media_in(body: Any) -> list[tuple[str, bytes]]:
    """Every inline image or document of a request body, as ``(media type, bytes)``."""
    found: list[tuple[str, bytes]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key in ("url", "file_data"):
                value = node.get(key)
                if isinstance(value, str) and value.startswith("data:"):
                    header, _, data = value[5:].partition(",")
                    found.append((header.split(";")[0], _decode(data)))
            if isinstance(node.get("data"), str):
                mime = node.get("media_type") or node.get("mimeType") or node.get("mime_type")
                if mime:
                    found.append((str(mime), _decode(node["data"])))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(body)
    return found


def shape(node: Any) -> Any:
    """``node`` with inline payloads replaced by ``<data>`` and list order of parts kept."""
    node = copy.deepcopy(node)

    def walk(item: Any) -> Any:
        if isinstance(item, dict):
            out = {}
            for key, value in item.items():
                if key == "cache_control":
                    continue
                if isinstance(value, str) and value.startswith("data:"):
                    out[key] = value.split(",", 1)[0] + "," + DATA
                elif key == "data" and isinstance(value, str):
                    out[key] = DATA
                else:
                    out[key] = walk(value)
            return out
        if isinstance(item, list):
            return [walk(v) for v in item]
        return item

    return walk(node)


def dimensions(data: bytes) -> tuple[int, int] | None:
    try:
        with Image.open(io.BytesIO(data)) as image:
            return image.size
    except OSError:
        return None


def png(width: int = 64, height: int = 48, color: tuple[int, int, int] = (200, 30, 30)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), color).save(out, format="PNG")
    return out.getvalue()
