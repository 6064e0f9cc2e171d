"""commsim's plugins: the papers' protocols, reductions, models and constructions."""
