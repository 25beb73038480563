import sys

from mldiag.verify.cli import main

sys.exit(main())
