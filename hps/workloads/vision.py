"""Vision workloads, built from the real layer shapes: ResNet v1.5 at any depth."""

from __future__ import annotations

import dataclasses

from hps.config.types import JobDefaults, Layer
from hps.errors import ConfigError
from hps.workloads.bounds import MAX_WIDTH
from hps.workloads.entry import Architecture, ZooEntry, architecture
from hps.workloads.layers import LABEL_BYTES, bottleneck, conv2d, conv_out, dense, loss, merge_layers, pool2d

IMAGENET_EPOCH = 1_281_167.0
"""Images in one epoch of ImageNet-1k training."""


@architecture("ResNet-{depth} v1.5 at {image_size}x{image_size}: stem, {bottlenecks} bottleneck blocks, fc-{classes}")
class ResNet(Architecture):
    """ResNet v1.5 (He et al., "Deep Residual Learning for Image Recognition", CVPR 2016, Table 1,
    with the stride on the 3x3 conv as torchvision): one row for the stem (7x7 conv, max pool), one
    per bottleneck block, one for the head (global average pool + fc) and one for the loss. Depth =
    3 * sum(blocks) + 2.

    Defaults (ResNet-50): 224 x 224 x 3 images (read as decoded uint8 pixels, 150,528 B, + a 4 B
    label), stem width 64, stages of 3-4-6-3 bottleneck blocks (mid widths 64, 128, 256, 512;
    expansion 4), 1000 classes: about 4.1 G multiply-adds (8.2 GFLOP) forward per image, 25.6 M
    parameters. ResNet-152 (blocks 3-8-36-3): about 11.5 G multiply-adds, 60.2 M parameters.

    Hyperparameters: `image_size` input height and width (pixels), `channels` input channels (uint8
    each), `width` stem channels (stage s has bottleneck mid width `width` * 2^s), `blocks`
    bottleneck blocks per stage, `classes` softmax outputs.
    """

    image_size: int = 224
    channels: int = 3
    width: int = 64
    blocks: tuple[int, ...] = (3, 4, 6, 3)
    classes: int = 1000
    depth = ("blocks",)

    def row_count(self) -> int:
        return sum(self.blocks) + 3  # stem, the bottleneck blocks, head, loss

    def check_size(self, entry: str, source: str) -> None:
        """Also ConfigError when the last stage's output width, 4 * width * 2^(stages - 1)
        channels, passes MAX_WIDTH (each stage doubles the width)."""
        super().check_size(entry, source)
        widest = 4 * self.width * 2 ** (len(self.blocks) - 1)
        if widest > MAX_WIDTH:
            raise ConfigError(
                source,
                f"{entry}.width + blocks",
                f"{len(self.blocks)} stages from width {self.width} end {widest:,} channels wide, "
                f"more than the {MAX_WIDTH:,} a layer may be",
            )

    def table(self) -> tuple[Layer, ...]:
        size, h = self.image_size, conv_out(self.image_size, 7, 2)
        stem = merge_layers(
            "stem",
            [
                conv2d("stem.conv", size, size, self.channels, self.width, 7, 2),
                pool2d("stem.maxpool", h, h, self.width, 3, 2),
            ],
        )
        layers = [dataclasses.replace(stem, io_bytes=size * size * self.channels * 1.0 + LABEL_BYTES)]
        h, c_in = conv_out(h, 3, 2), self.width
        for stage, count in enumerate(self.blocks):
            mid = self.width * 2**stage
            for i in range(count):
                stride = 2 if stage > 0 and i == 0 else 1
                layers.append(bottleneck(f"conv{stage + 2}_{i + 1}", h, h, c_in, mid, stride))
                h, c_in = conv_out(h, 3, stride), 4 * mid
        head = merge_layers("head", [pool2d("head.avgpool", h, h, c_in, h, h), dense("head.fc", c_in, self.classes)])
        return (*layers, head, loss("loss", self.classes))

    def derived(self, layers: tuple[Layer, ...]) -> dict[str, object]:
        return {"depth": 3 * sum(self.blocks) + 2, "bottlenecks": sum(self.blocks)}


resnet50 = ZooEntry("resnet50", ResNet(), JobDefaults(batch=1024.0, throughput=5000.0, samples=90 * IMAGENET_EPOCH))
"""Job: batch 1024, floor 5000 images/s, 90 ImageNet epochs (1.15e8 images)."""
resnet152 = ZooEntry(
    "resnet152",
    ResNet(blocks=(3, 8, 36, 3)),
    JobDefaults(batch=1024.0, throughput=2000.0, samples=90 * IMAGENET_EPOCH),
)
"""ResNet-152 (He et al. 2016, Table 1: bottleneck blocks 3-8-36-3; 11.5 G multiply-adds forward per
image, 60.2 M parameters), the image model of the Themis evaluation. Job: the MLPerf-style ImageNet
run of `resnet50` (batch 1024, 90 epochs = 1.15e8 images; no micro-batching or state sharding: the
model fits any device whole) at a floor of 2000 images/s, 16 hours, for 2.8x ResNet-50's compute
per image."""
