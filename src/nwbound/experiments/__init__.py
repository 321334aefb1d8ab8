"""Experiments that reproduce the paper's tables and figures (see ``nwbound experiment --help``).

:data:`EXPERIMENTS` lists the module names under this package; each provides
``DESCRIPTION``, ``add_arguments(parser)`` and ``run(args, output) -> list[Path]``.
"""

EXPERIMENTS: tuple[str, ...] = ("synthetic", "margin", "mnist", "gtsrb", "ablation", "ecg", "shift", "tabular")
