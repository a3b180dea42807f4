"""Shared optimisation machinery, written once for every family:

* :mod:`~cyrank.optim.smooth`: ``SmoothProblem``, the contract between a smooth loss and the optimisers
  (value, gradient, Hessian products; trial/commit);
* :mod:`~cyrank.optim.tron`: trust-region Newton-CG (Lin & More 1999; Lin, Weng & Keerthi 2008);
* :mod:`~cyrank.optim.owlqn`: L-BFGS and orthant-wise L-BFGS for an l1 term (Andrew & Gao 2007);
* :mod:`~cyrank.optim.cutting_plane`: the 1-slack cutting-plane method (Joachims 2006), its restricted dual QP in
  ``_simplex_qp``;
* ``_quadratic_l1``: coordinate descent on a quadratic model plus an l1 term (proximal Newton's inner problem);
* :mod:`~cyrank.optim.result`: ``OptimResult``, the one result they return;
* :mod:`~cyrank.optim.certificate`: how far from the optimum an iterate is, invariant to rescaling a feature
  (column scales by ``_column_squares``).
"""
