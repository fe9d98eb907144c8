"""The specialist agents a playbook runs: planner, gatherer (and its search lanes and
shared source pool), analyzer, refiner, sub-question answerer, and the hypothesizer."""
