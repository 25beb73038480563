import sys

from tools.verify.cli import main

sys.exit(main())
