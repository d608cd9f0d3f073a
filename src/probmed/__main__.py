import sys

from probmed.cli import main

sys.exit(main())
