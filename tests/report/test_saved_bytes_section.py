"""The Memory section shows the saved_bytes study: its figure with SVG and CSV, the sentence, the table."""
from __future__ import annotations

import re

from diffcompare import studies
from diffcompare.report import render


def test_memory_section_shows_what_the_graph_keeps(synthetic_results):
    assert 'data-key="saved-bytes"' not in render(synthetic_results, seeds=False)
    studies.run_study("saved_bytes", synthetic_results, quick=True)
    page = render(synthetic_results, seeds=False)
    assert 'id="saved-bytes"' in page and 'data-key="saved-bytes"' in page
    assert 'download="saved-bytes.svg"' in page and 'download="saved-bytes.csv"' in page
    csv = re.search(r'download="saved-bytes.csv" href="data:text/csv;charset=utf-8,([^"]*)"', page).group(1)
    assert "model,library,batch,saved_bytes,parameter_bytes,parameter_share" in csv.replace("%0A", "\n")
    assert "seed001,torch,512,14344,44," in csv.replace("%0A", "\n")
    assert "the graph keeps 28 B per sample" in page
    assert "seed001: engine and torch totals: equal at batches 1, 8, 64, 512" in page
