"""Drawing autograd graphs, the engine's and PyTorch's, with one drawer.

- :mod:`diffcompare.viz.layout`: a layered layout of text boxes and its SVG, in pure Python;
- :mod:`diffcompare.viz.graph`: an autograd graph (engine or torch) as boxes and edges,
  written as DOT text or SVG, with a key explaining the colours;
- :mod:`diffcompare.viz.libs`: the libraries drawn side by side (the engine, torch);
- :mod:`diffcompare.viz.from_file`: ``diffcompare graph FILE``, a user's function drawn on both.
"""
