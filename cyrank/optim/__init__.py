"""Shared optimisation machinery, written once for every family:

* :mod:`~cyrank.optim.smooth`: ``SmoothProblem``, the contract between a smooth loss and the optimisers
  (value, gradient, Hessian products; trial/commit);
* :mod:`~cyrank.optim.tron`: trust-region Newton-CG (Lin & More 1999; Lin, Weng & Keerthi 2008);
* :mod:`~cyrank.optim.owlqn`: L-BFGS and orthant-wise L-BFGS for an l1 term (Andrew & Gao 2007);
* :mod:`~cyrank.optim.penalties`: l2, l1 and elastic net as penalty objects (value, prox, subdifferential distance);
* :mod:`~cyrank.optim.prox_newton`: proximal Newton with working sets for a smooth problem plus an l1 term (Yuan,
  Ho & Lin 2012), its inner problem solved by coordinate descent in ``_quadratic_l1``;
* :mod:`~cyrank.optim.path`: regularisation paths (the exact alpha_max, the alpha grid, warm starts, ``PathResult``);
* :mod:`~cyrank.optim.cutting_plane`: the 1-slack cutting-plane method (Joachims 2006), its restricted dual QP in
  ``_simplex_qp``;
* :mod:`~cyrank.optim.result`: ``OptimResult``, the one result they return;
* :mod:`~cyrank.optim.certificate`: how far from the optimum an iterate is, invariant to rescaling a feature
  (column scales by ``_column_squares``).
"""
