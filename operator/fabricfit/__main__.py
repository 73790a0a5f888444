"""``python -m fabricfit`` is the same as the ``fabricfit`` console script."""

from fabricfit.cli.main import main

raise SystemExit(main())
