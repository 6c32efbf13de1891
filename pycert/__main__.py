import sys

from pycert.cli import main

sys.exit(main())
