"""Jupyter kernels forked from a process that has already imported torch.

A fresh IPython kernel spends about 2.5 s of CPU importing torch, dynamo and inductor
before the first cell does anything, and the first inductor compile in it hashes
torch's sources once more (``torch_key``). The test command starts some twenty such
kernels on two cores. Here one template process per test worker pays those costs
once, and every kernel is a ``fork`` of it that then starts IPython as
``python -m ipykernel_launcher`` would.

- ``server``: the template. It imports, then forks one kernel per request (the preload and the
  fork are ``course_grader.forkserver``'s, which the grader's sandbox template uses too).
- ``provisioner``: a jupyter_client kernel provisioner that asks the template for a
  kernel, and launches an ordinary one whenever the request does not fit the template
  (another Python, another environment, a template that failed).
- ``kernelspec``: writes the kernel spec that names the provisioner.

The kernels are the same program as ordinary ones. ``pytest --nbval`` compares every
stored output against them, and ``tests/course_tools/test_warm_kernels.py`` checks them against a
fresh kernel directly.
"""
