from segue.cli import main

raise SystemExit(main())
