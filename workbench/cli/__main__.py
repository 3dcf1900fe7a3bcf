"""`python -m workbench.cli`: the same as the `workbench` command."""

from workbench.cli import main

raise SystemExit(main())
