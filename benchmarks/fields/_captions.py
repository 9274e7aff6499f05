"""Synthetic COCO-like per-sample text: captions and image metadata JSON, seeded.

Captions follow COCO-captions' shape (one sentence, 8 to 16 words, about 50 characters, a small
vocabulary of scenes); the metadata follows the fields of a COCO `images` entry. Neither is real
data: compression figures on real text will differ, and the benchmark pages say so.
"""

from __future__ import annotations

import random

_SUBJECTS = (
    "a man",
    "a woman",
    "a young boy",
    "a little girl",
    "two people",
    "a group of people",
    "a dog",
    "a black cat",
    "a large elephant",
    "a herd of sheep",
    "a brown horse",
    "a giraffe",
    "a zebra",
    "a bird",
    "a tennis player",
    "a skier",
    "a surfer",
    "a baseball player",
    "a red double decker bus",
    "a white truck",
    "a small airplane",
    "a train",
    "a motorcycle",
    "a plate of food",
    "a pizza",
    "a bowl of fruit",
    "a sandwich",
    "a kitchen",
    "a bathroom",
    "a living room",
    "a clock tower",
    "a fire hydrant",
    "a stop sign",
    "a bench",
    "a laptop",
)
_VERBS = (
    "sitting on",
    "standing next to",
    "riding",
    "walking down",
    "holding",
    "looking at",
    "parked in front of",
    "flying over",
    "lying on",
    "eating",
    "playing with",
    "crossing",
    "waiting at",
    "covered in",
    "on top of",
    "in the middle of",
    "near",
    "inside",
)
_OBJECTS = (
    "a wooden table",
    "a city street",
    "a grassy field",
    "a sandy beach",
    "a snowy slope",
    "a wave",
    "a frisbee",
    "a skateboard",
    "a surfboard",
    "a tennis racket",
    "an umbrella",
    "a kite",
    "a busy road",
    "a train station",
    "the water",
    "a fence",
    "a tree",
    "a couch",
    "a white plate",
    "a cutting board",
    "a sink",
    "a toilet",
    "a building",
    "the sidewalk",
    "a dirt road",
    "a park",
    "a crowd of people",
    "a mirror",
    "a window",
    "a computer desk",
)
_TAILS = (
    "",
    "",
    "",
    " on a sunny day",
    " at night",
    " in the rain",
    " next to each other",
    " with trees in the background",
    " in front of a building",
    " near the ocean",
    " with a blue sky",
    " while people watch",
)


def captions(count: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        text = f"{rng.choice(_SUBJECTS)} {rng.choice(_VERBS)} {rng.choice(_OBJECTS)}"
        out.append((text + rng.choice(_TAILS)).capitalize() + rng.choice((".", ".", "")))
    return out


def image_metadata(count: int, seed: int = 0) -> list[dict[str, object]]:
    """Objects shaped like COCO's `images` entries (license, file name, URLs, size, date, id)."""
    rng = random.Random(seed)
    rows = []
    for _ in range(count):
        image_id = rng.randrange(1, 581_930)
        farm, server = rng.randrange(1, 10), rng.randrange(1000, 9999)
        photo = f"{rng.randrange(10**9, 10**10)}_{rng.getrandbits(40):010x}"
        rows.append(
            {
                "license": rng.randrange(1, 9),
                "file_name": f"{image_id:012d}.jpg",
                "coco_url": f"http://images.cocodataset.org/train2017/{image_id:012d}.jpg",
                "height": rng.choice((480, 427, 640, 375, 500, 333)),
                "width": rng.choice((640, 480, 500, 427, 612)),
                "date_captured": f"2013-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d} "
                f"{rng.randrange(24):02d}:{rng.randrange(60):02d}:{rng.randrange(60):02d}",
                "flickr_url": f"http://farm{farm}.staticflickr.com/{server}/{photo}_z.jpg",
                "id": image_id,
            }
        )
    return rows
