"""COBALT's veRL plugin, loaded in every process that imports ``verl`` (the ``verl.plugins``
entry point, or ``VERL_USE_EXTERNAL_MODULES=cobalt.train.verl_plugin``). Cheap to import:

* registers the ``cpu`` platform (its patches apply only with ``VERL_PLATFORM=cpu``);
* registers the ``cobalt_sync`` trainer (:mod:`cobalt.train.trainer`) when, and only in the
  process where, veRL's v1 trainer is imported.
"""

import importlib

from cobalt.train import cpu_platform  # noqa: F401  (registers the platform)
from cobalt.train.import_hooks import when_imported

when_imported("verl.trainer.ppo.v1.trainer_sync", lambda _: importlib.import_module("cobalt.train.trainer"))
