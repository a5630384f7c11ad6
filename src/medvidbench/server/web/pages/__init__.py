"""Server-rendered pages, by what they are for. They work without JavaScript; a little script
adds live updates.

- :mod:`.boards`: a benchmark's pages under ``/b/<slug>/`` (boards, compare, submit, About),
  the front page, and redirects from the single-benchmark URLs of earlier versions;
- :mod:`.submissions`: a submission's page;
- :mod:`.accounts`: log in, sign up, the account page (tokens, team);
- :mod:`.admin`: the admin area;
- :mod:`.consensus`: the consensus board across the hosted benchmarks.
"""

from __future__ import annotations

from medvidbench.server.web.pages import accounts, admin, boards, consensus, submissions

ROUTERS = (boards.router, submissions.router, accounts.router, admin.router, consensus.router)
