"""Derivative operators: sparse Jacobians and Hessians by colouring (and the dense operators)."""
