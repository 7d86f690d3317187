import sys

from iclr25.cli import main

sys.exit(main())
