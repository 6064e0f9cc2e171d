"""The formal statement each lesson opens with: the theorem in the paper's notation (in commsim's words), its
source, and the conventions where the papers (or commsim) differ.

Result numbers are those of the papers' own texts as :data:`protocols.theorems.PAPER_RESULTS` lists them;
[SHT23]'s results are known from slides and a summary that number none, so they are named by content; [PNP24]
is known from the slides that state its Theorems 1 and 2.  The texts carry no page numbers: the sources name the
section or appendix instead.
"""
from __future__ import annotations

from commsim import Statement

#: what the [BHBK24] symbols mean, shared by the lessons that use them
_RNN = ("A recurrent model reads s_1, ..., s_N left to right and carries a hidden state of m numbers, each stored "
        "with p bits (the paper's finite-precision assumption: every number a model computes is a p-bit value).")
_TF = ("TF¹_{m,p,H} is the class of one-layer transformers with H attention heads of width m whose numbers are "
       "p-bit values (finite precision, App. B.2 of [BHBK24]); a partition S_A ⊔ S_B = {1, ..., N} gives Alice the "
       "positions S_A and Bob the positions S_B.")
_DISJ = ("DISJ(a, b) = 1 means the sets MEET in [BHBK24] (Fact 1), and commsim follows it; [SHT23]'s Match3 "
         "reduction reads 1 as DISJOINT. Every DISJ value commsim prints is in [BHBK24]'s sense.")

STATEMENTS = {
    "rnn-index": Statement(
        "Theorem 3 of [BHBK24]: recurrent models and Index Lookup",
        "If a recurrent model with hidden-state width m at p bits of precision solves Index Lookup — read "
        "s_1, ..., s_N, then an index i, and output s_i — on every input of length N, then its width satisfies "
        "m ≥ N/p. The proof: Theorem 2 turns the model into a one-way protocol of m·p bits for the split after "
        "s_N, and INDEX on N symbols needs N bits one-way (Fact 3).",
        r"m \ge \frac{N}{p}\quad\iff\quad m p \ge N",
        "[BHBK24], Theorem 3 with Theorem 2 (Sec. 3; proof in App. C.1) and Fact 3 (App. B.1)",
        _RNN,
        "The paper's N counts the symbols s_1..s_N; the lesson calls it n (commsim's --n) because the model reads "
        "N = n + 1 tokens with the index. Positions and indices count from 1."),
    "rnn-eq": Statement(
        "Theorem 11 of [BHBK24]: recurrent models and equality",
        "A recurrent model with width m at p bits that computes EQ (equivalently INEQ = 1 − EQ) on every string of "
        "{0,1}^N has m ≥ N/(2p). Two proofs: the handoff of Theorem 2 is a one-way protocol for EQ on the two halves "
        "(Fact 2: N/2 bits), and, by Lemma 4, the model is a finite automaton with at most 2^(mp) states while INEQ "
        "needs 2^(N/2).",
        r"m \ge \frac{N}{2 p}\quad\iff\quad m p \ge \frac{N}{2}",
        "[BHBK24], Theorem 11 and Lemma 4 (App. F.1), Fact 2 (App. B.1)",
        _RNN,
        "N is the whole string's length; each party holds n = N/2 bits, and --n is that n."),
    "rnn-disj": Statement(
        "Theorem 8 of [BHBK24]: recurrent models and nearest neighbours",
        "A recurrent model with width m at p bits that performs the nearest-neighbour task on every input of N "
        "vectors has m ≥ N/(2p). The proof goes through multi-query associative recall: the handoff after the "
        "labelled keys lets Bob read back all labels, so the model solves DISJ on N/2 bits one-way (Fact 1).",
        r"m \ge \frac{N}{2 p}\quad\iff\quad m p \ge \frac{N}{2}",
        "[BHBK24], Theorem 8 (Sec. 5.2; proof in App. G.1) and Fact 1 (App. B.1)",
        _RNN,
        _DISJ + " The paper's N counts N/2 labelled keys and N/2 queries; --n is n = N/2, and commsim spends two "
        "tokens on a labelled key."),
    "attention-protocol": Statement(
        "Theorem 4 of [BHBK24]: one attention layer is a cheap protocol",
        "For every f ∈ TF¹_{m,p,H} on inputs of length N and every partition S_A ⊔ S_B = {1, ..., N}, Alice (holding "
        "x_i for i ∈ S_A) and Bob (holding x_i for i ∈ S_B) can compute f(x) exchanging at most 3m(p + log N)H "
        "bits: the maximum logit, then the partial softmax sums.",
        r"\mathrm{CC}_{S_A, S_B}(f) \le 3 m (p + \log N) H\qquad \text{for every } f \in \mathrm{TF}^1_{m,p,H}",
        "[BHBK24], Theorem 4 (Sec. 4; proof in App. D); the one-way form is [SHT23]'s (one-way attention protocol)",
        _TF,
        "commsim counts whole bits, ⌈log2 N⌉ for log N, and adds the query q_N (m·p·H bits) when its owner must "
        "send it. Positions and heads count from 1."),
    "attention-dyck": Statement(
        "Lemma 1 and Theorem 5 of [BHBK24]: Dyck-(2,2) against one layer",
        "With the odd positions of s ∈ Σ^N given to Alice and the even ones to Bob, deciding s ∈ Dyck-(2,2) takes "
        "at least N − 1 bits (Lemma 1, by a fooling set). With Theorem 4, every f ∈ TF¹_{m,p,H} deciding Dyck-(2,2) "
        "has mH ≥ (N − 1)/(3(p + log N)) (Theorem 5).",
        r"m H \ge \frac{N - 1}{3 (p + \log N)}",
        "[BHBK24], Lemma 1 (Sec. 4.1; proof in App. E) and Theorem 5 (Sec. 4.1); fooling sets: Definition 1, "
        "Fact 4 (App. E)",
        _TF + " Dyck-(2,2): balanced strings over two bracket types nested at most 2 deep.",
        "commsim's whole-bit form puts ⌈log2 N⌉ for log N (it asks a little less of the width). Alice holds "
        "positions 1, 3, 5, ..., Bob 2, 4, 6, ...; N is the string length (--n)."),
    "attention-disj": Statement(
        "[SHT23]: Match3 and q-sparse averaging against one layer",
        "A one-layer attention computing Match3 on N positions decides DISJ on about N/2 bits, so m·H·(p + log N) "
        "= Ω(N). A one-layer attention approximating q-sparse averaging, where the query's holder knows only the "
        "set y, gives a one-way DISJ_q protocol, so its message — of order m·p·H bits — is Ω(q).",
        r"m H (p + \log N) = \Omega(N)\ \ (\text{Match3}),\qquad m p H = \Omega(q)\ \ (\text{qSA})",
        "[SHT23], the Match3 lower bound and the qSA lower bound for attention (named results: the available texts "
        "number none); DISJ: Fact 1 of [BHBK24]",
        _TF + " Match3 at i: some j, k with z_i + z_j + z_k ≡ 0 mod M. qSA: the average of the values at the q "
        "positions of a set y.",
        _DISJ + " commsim's Match3 takes j, k distinct and both ≠ i; its qSA message is min(d·p, (2m + 1)·p·H) "
        "bits (its own refinement)."),
    "fooling-sets": Statement(
        "Definition 1 and Fact 4 of [BHBK24]: fooling sets",
        "A set S of input pairs is a fooling set for f when f is constant (= b) on S and for any two pairs "
        "(x1, y1) ≠ (x2, y2) in S, f(x1, y2) ≠ b or f(x2, y1) ≠ b. Then every deterministic protocol for f sends "
        "at least log2 |S| bits on some input. EQ_n, DISJ_n and INDEX_n (one-way) need n bits (Facts 1–3).",
        r"D(f) \ge \log_2 |S|",
        "[BHBK24], Definition 1 and Fact 4 (App. E), Facts 1–3 (App. B.1); the rectangle property and log-rank: "
        "Kushilevitz and Nisan, ch. 1–2",
        "D(f): the deterministic communication complexity of f, the bits of the best protocol on its worst input.",
        _DISJ),
    "two-layers": Statement(
        "Lemma 5 and Corollary 13.1 of [BHBK24]: why the method stops at one layer",
        "There is a two-layer transformer f of width and precision O(log N) (Theorem 6) that needs N/2 bits of "
        "communication on EVERY balanced partition of its N positions. So no protocol of O(m·p·H·polylog N) bits "
        "can simulate every two-layer transformer.",
        r"\mathrm{CC}_{S_A, S_B}(f) \ge \frac{N}{2}\ \ \text{for every balanced } S_A \cup S_B,"
        r"\qquad m, p = O(\log N)",
        "[BHBK24], Lemma 5 and Corollary 13.1 (App. F.4); Theorem 6 (Sec. 5.1; App. F.2)",
        "TF²_{m,p,H}: two-layer transformers; balanced: |S_A| = |S_B| = N/2.",
        "--n is n = N/2; positions count from 1."),
    "compose": Statement(
        "Theorem 1 of [PNP24]: function composition against one layer",
        "Let f and g be functions on domains of size n given in the prompt and an H-head attention layer of "
        "embedding dimension d at p bits answer g(f(x)). If R = n log n − H(d + 1)p > 0, the layer answers wrongly "
        "with probability at least R/(3 n log n) over uniformly random f, g and x. (Theorem 2: with chain of "
        "thought, iterated composition needs Ω(√(n/(Hdp))) generated steps.)",
        r"\Pr[\text{wrong}] \ge \frac{R}{3 n \log n},\qquad R = n \log n - H (d + 1) p",
        "[PNP24] (Peng, Narayanan, Papadimitriou, COLM 2024), Theorems 1 and 2, as stated in the STAT 9910 slides",
        "H heads, embedding dimension d, precision p; the domain size n.",
        "commsim's deterministic corollary (⌈log2 n^n⌉ bits one-way) and its C-bit form are its own. Function values "
        "in the prompt are labels 0..n − 1."),
    "graph-transformers": Statement(
        "[SHT23]: graph transformers and Directed 3-Cycle",
        "A graph transformer of L layers, H heads of width m at p bits, whose tokens are the rows of a digraph's "
        "adjacency matrix, decides whether the digraph on N nodes has a directed triangle only if L·H·m·p = Ω̃(N). "
        "commsim's exact node-partition protocol gives L·H·2n·2m·p + 2 ≥ n² through DISJ on n² bits (N = 3n), "
        "i.e. L·H·m·p ≥ (n² − 2)/(4n).",
        r"L H m p \ge \frac{n^2 - 2}{4 n} \approx \frac{N}{12}",
        "[SHT23], the graph-transformer lower bound for Directed 3-Cycle (a named result); DISJ: Fact 1 of [BHBK24]",
        "L layers, H heads, width m, precision p; the nodes are split into U (Alice), V (Bob) and W (public).",
        _DISJ + " --n is n; the digraph has N = 3n nodes, numbered from 1 in each group."),
    "randomized": Statement(
        "Randomized communication: which bounds survive coins",
        "With error ε on every input, EQ_n costs O(log n) bits with private coins and O(log 1/ε) with public coins; "
        "INDEX_n one-way still needs (1 − H2(ε))·n bits; DISJ_n still needs Ω(n) bits two-way at ε = 1/3.",
        r"R_\epsilon(\mathrm{EQ}_n) = O(\log n),\quad R^{\to}_\epsilon(\mathrm{INDEX}_n) \ge (1 - H_2(\epsilon))\,n,"
        r"\quad R_{1/3}(\mathrm{DISJ}_n) = \Omega(n)",
        "standard results: fingerprints (Kushilevitz and Nisan, ch. 3); Kremer, Nisan and Ron 1999 (INDEX); "
        "Kalyanasundaram and Schnitger 1992, Razborov 1992 (DISJ)",
        "R_ε: the bits of the best protocol with coins that errs with probability at most ε on every input; "
        "R^→: one-way; H2 the binary entropy.",
        "The models' bounds in [BHBK24] are deterministic: they bind exact models. " + _DISJ),
}
