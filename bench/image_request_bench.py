"""What it costs to build one model request from a 200-message thread holding 10 images.

The thread lives in the in-memory store: 200 alternating user/assistant messages,
10 of the user messages (spread over the thread) carry one JPEG attachment each.
One run does what a step does before the bytes go on the wire:

1. ``select_rows`` + ``to_llm_messages`` (history with ``attachment`` parts);
2. ``resolve_attachments`` (reads the 10 files, base64 data URLs);
3. ``fit_for_model`` for the vendor (checks the vendor's limits);
4. the adapter's ``build_request`` (vendor JSON) and ``json.dumps`` of the body
   (what httpx sends);
5. ``strip_inline_data`` of that body (what the request log stores).

Each stage is timed separately; the figure is the median of ``--runs`` runs.
Two image sizes: a typical photo after the upload rule (1024x768 JPEG) and the
largest the upload rule keeps (about 1.5 MiB). ``--threshold`` sets
``recentImageThreshold`` (default 10: all 10 images are sent).

    .venv/bin/python bench/image_request_bench.py [--runs 15] [--threshold 10] [--smoke]

``--smoke`` (the test suite's): one run, 20 messages and 2 small images of each kind.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
from PIL import Image  # noqa: E402

from runtime.core.messages import Message  # noqa: E402
from runtime.core.spec import ModelDefinition  # noqa: E402
from runtime.providers.adapter import HTTPAdapter, encode_body, strip_inline_data  # noqa: E402
from runtime.providers.anthropic.provider import AnthropicProvider  # noqa: E402
from runtime.providers.base import ProviderRequest  # noqa: E402
from runtime.providers.google.provider import GoogleProvider  # noqa: E402
from runtime.providers.openai.chat_completions import OpenAIProvider  # noqa: E402
from runtime.providers.openai.responses import OpenAIResponsesProvider  # noqa: E402
from runtime.step.history import Window, select_rows, to_llm_messages  # noqa: E402
from runtime.step.media import fit_for_model, resolve_attachments  # noqa: E402
from runtime.store.memory import MemoryStore  # noqa: E402
from runtime.store.protocol import NewThread  # noqa: E402

MESSAGES = 200
IMAGES = 10
SMOKE_MESSAGES, SMOKE_IMAGES = 20, 2


def photo(width: int, height: int, sigma: float) -> bytes:
    """A JPEG with photo-like detail: a gradient plus noise of ``sigma`` per channel."""
    base = Image.linear_gradient("L").resize((width, height))
    channels = [
        Image.blend(base, Image.effect_noise((width, height), sigma), 0.5) for _ in range(3)
    ]
    out = io.BytesIO()
    Image.merge("RGB", channels).save(out, format="JPEG", quality=85)
    return out.getvalue()


async def thread_with_images(
    store: MemoryStore,
    image: bytes,
    size: tuple[int, int],
    messages: int = MESSAGES,
    images: int = IMAGES,
) -> list[Message]:
    thread = await store.create_thread(NewThread(id="bench-thread", agent_name="bench"))
    carriers = {int(i * messages / images) // 2 * 2 for i in range(images)}  # user rows
    rows: list[Message] = []
    for index in range(messages):
        role = "user" if index % 2 == 0 else "assistant"
        attachments = None
        if index in carriers:
            path = f"/attachments/photo-{index}.jpg"
            await store.write_file(
                thread.id, path, image, "image/jpeg", width=size[0], height=size[1]
            )
            attachments = [
                {
                    "id": path,
                    "type": "file",
                    "path": path,
                    "name": f"photo-{index}.jpg",
                    "mimeType": "image/jpeg",
                    "size": len(image),
                    "width": size[0],
                    "height": size[1],
                }
            ]
        text = f"Message {index}: " + "some words of conversation " * 12
        rows.append(
            Message(
                id=f"m{index}",
                role=role,
                content=text,
                created_at=index + 1,
                attachments=attachments,
            )
        )  # type: ignore[arg-type]
    reader_id = thread.id

    async def read(path: str) -> bytes | None:
        return await store.read_file(reader_id, path)

    store._bench_read = read  # type: ignore[attr-defined]
    return rows


async def one_run(
    store: MemoryStore,
    rows: list[Message],
    adapter: HTTPAdapter,
    model: ModelDefinition,
    threshold: int,
) -> dict[str, float]:
    window = Window(True, True, 0, 0, "a", False)
    times: dict[str, float] = {}
    t = time.perf_counter()
    messages = to_llm_messages(select_rows(rows, window), window)
    times["history"] = time.perf_counter() - t
    t = time.perf_counter()
    messages = await resolve_attachments(messages, store._bench_read, threshold)  # type: ignore[attr-defined]
    times["read+encode"] = time.perf_counter() - t
    t = time.perf_counter()
    messages = await fit_for_model(messages, model)
    times["fit"] = time.perf_counter() - t
    request = ProviderRequest(model=model.model, system="You are helpful.", messages=messages)
    t = time.perf_counter()
    body = adapter.build_request(request).body
    wire = encode_body(body)
    times["vendor json"] = time.perf_counter() - t
    t = time.perf_counter()
    strip_inline_data(body)
    times["log body"] = time.perf_counter() - t
    times["total"] = sum(times.values())
    times["request MB"] = len(wire) / 1e6
    return times


async def run(runs: int, threshold: int, smoke: bool = False) -> None:
    client = httpx.AsyncClient()
    messages, images = (SMOKE_MESSAGES, SMOKE_IMAGES) if smoke else (MESSAGES, IMAGES)
    # The smoke run's images are small: the same paths, without the seconds of encoding.
    typical, ceiling = ((64, 48), (90, 68)) if smoke else ((1024, 768), (1800, 1350))
    vendors: list[tuple[str, str, HTTPAdapter]] = [
        ("openai", "openai", OpenAIProvider(client, "k")),
        ("responses", "openai", OpenAIResponsesProvider(client, "k")),
        ("anthropic", "anthropic", AnthropicProvider(client, "k")),
        ("google", "google", GoogleProvider(client, "k")),
    ]
    for label, image, size in (
        (f"{typical[0]}x{typical[1]} photo", photo(*typical, 12), typical),
        (
            "a noisier photo" if smoke else "near the 1.5 MiB upload ceiling",
            photo(*ceiling, 40),
            ceiling,
        ),
    ):
        store = MemoryStore()
        rows = await thread_with_images(store, image, size, messages, images)
        print(
            f"\n{messages} messages, {images} images of {len(image) / 1024:.0f} KiB ({label}), threshold {threshold}"
        )
        for vendor, provider, adapter in vendors:
            model = ModelDefinition(name="m", provider=provider, model="x")  # type: ignore[arg-type]
            results = [await one_run(store, rows, adapter, model, threshold) for _ in range(runs)]
            keys = list(results[0])
            medians = {k: statistics.median(r[k] for r in results) for k in keys}
            parts = ", ".join(
                f"{k} {medians[k] * 1000:.2f} ms" for k in keys if k not in ("total", "request MB")
            )
            print(
                f"  {vendor:9s} total {medians['total'] * 1000:6.1f} ms  ({parts}); body {medians['request MB']:.1f} MB"
            )
    await client.aclose()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--threshold", type=int, default=10)
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="seconds: the smallest sizes that take every path (the test suite's)",
    )
    args = parser.parse_args(argv)
    asyncio.run(run(1 if args.smoke else args.runs, args.threshold, args.smoke))


if __name__ == "__main__":
    main()
