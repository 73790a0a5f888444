"""Command-line entry points: ``fabricfit run | plan | cost | crd``.

Each subcommand lives in its own module exposing ``configure(parser)`` and ``execute(args)``;
the dispatcher imports only the chosen one, so ``plan`` and ``cost`` never pay for (or depend on)
kopf and the Kubernetes client.
"""
