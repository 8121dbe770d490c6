"""Vision workloads, built from the real layer shapes."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from hps.config.types import JobDefaults, Workload
from hps.workloads.layers import (
    LABEL_BYTES,
    bottleneck,
    conv2d,
    conv_out,
    dense,
    loss,
    merge_layers,
    pool2d,
)


def resnet50(
    image_size: int = 224,
    channels: int = 3,
    width: int = 64,
    blocks: Sequence[int] = (3, 4, 6, 3),
    classes: int = 1000,
) -> Workload:
    """ResNet-50 (v1.5, stride on the 3x3 conv, as torchvision): one row for the stem, one per
    bottleneck block, one for the head (global average pool + fc) and one for the loss.

    Defaults: 224 x 224 x 3 images (read as decoded uint8 pixels, 150,528 B, + a 4 B label), stem
    width 64, stages of 3-4-6-3 bottleneck blocks (mid widths 64, 128, 256, 512; expansion 4), 1000
    classes: about 4.1 G multiply-adds (8.2 GFLOP) forward per image, 25.6 M parameters.
    Job: batch 1024, floor 5000 images/s, 90 ImageNet epochs (1.15e8 images).
    """
    h = conv_out(image_size, 7, 2)
    stem = merge_layers(
        "stem",
        [
            conv2d("stem.conv", image_size, image_size, channels, width, 7, 2),
            pool2d("stem.maxpool", h, h, width, 3, 2),
        ],
    )
    stem = dataclasses.replace(stem, io_bytes=image_size * image_size * channels * 1.0 + LABEL_BYTES)
    layers = [stem]
    h, c_in = conv_out(h, 3, 2), width
    for stage, count in enumerate(blocks):
        mid = width * 2**stage
        for i in range(count):
            stride = 2 if stage > 0 and i == 0 else 1
            layers.append(bottleneck(f"conv{stage + 2}_{i + 1}", h, h, c_in, mid, stride))
            h, c_in = conv_out(h, 3, stride), 4 * mid
    head = merge_layers("head", [pool2d("head.avgpool", h, h, c_in, h, h), dense("head.fc", c_in, classes)])
    layers += [head, loss("loss", classes)]
    return Workload(
        "resnet50",
        tuple(layers),
        JobDefaults(batch=1024.0, throughput=5000.0, samples=90 * 1_281_167.0),
        f"ResNet-50 v1.5 at {image_size}x{image_size}: stem, {sum(blocks)} bottleneck blocks, fc-{classes}",
    )
