from segue.entry import main

raise SystemExit(main())
