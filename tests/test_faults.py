"""Nothing lost, nothing silently wrong: every fault and hostile value found by trying hps as a
hostile user would, each a test that failed on the code before it was fixed.

- run folders and checkpoints (tests/faults/runs.py): two runs into one folder, a stale lock,
  a SIGKILL at every point of a chunk boundary, flipped and swapped checkpoint data;
- numbers and counts (tests/faults/numbers.py): every input past what float32 holds, nan/inf in
  any output, NPU and unit counts past what the model counts exactly, the models at the ends
  of the accepted ranges against the float64 reference;
- run folders held (tests/faults/folders.py): links to files hps owns refused, lost metrics
  reported, changed settings refused, full disks and unwritable folders as one error line, one
  lock for every command that writes a run folder, SIGTERM and SIGHUP handled as SIGINT;
- flags (tests/faults/flags.py): every numeric flag's range, checked as arguments are parsed;
- inputs (tests/faults/inputs.py): files that are no regular files, nested too deep or too
  large, byte-order marks, repeated keys, plan files held to the loaders' standard;
- sizes and hygiene (tests/faults/sizes.py): zoo sizes and memory bounded before any work,
  control characters in names, the umask, files that are executed as Python;
- outputs (tests/faults/outputs.py): devices, FIFOs and symlinks named as outputs, figure
  formats, the one writer, a closed standard output.

The parts live in their own modules to stay readable; importing them here makes this file the
one suite (`pytest tests/test_faults.py`).
"""

from tests.faults.flags import *  # noqa: F403
from tests.faults.folders import *  # noqa: F403
from tests.faults.inputs import *  # noqa: F403
from tests.faults.numbers import *  # noqa: F403
from tests.faults.outputs import *  # noqa: F403
from tests.faults.runs import *  # noqa: F403
from tests.faults.sizes import *  # noqa: F403
