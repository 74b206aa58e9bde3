"""Example programs, built with the same builder users have: the app opens them, tests and benchmarks
compile them."""

from __future__ import annotations

import math
from typing import Any

from scellis.datasets import CHARS_CONTEXT
from scellis.graph import Program, Ref
from scellis.ir import Function
from scellis.ops import DType, Op, const, make
from scellis.ops.defs import Distribution, RandomArg, Role
from scellis.ops.node import input_node


def digits_mlp() -> dict[str, Any]:
    """scikit-learn's 8x8 digits: 64 -> 128 (ReLU) -> 10, cross-entropy, Adam, batch 64."""
    p = Program("digits-mlp")
    x = p.input("pixels", [64])
    y = p.input("digit", [], dtype="int32", role="labels")
    logits = p.linear(p.relu(p.linear(x, 128, id="hidden"), id="relu"), 10, id="logits")
    p.set_loss(p.cross_entropy(logits, y, id="loss"))
    p.add_metric(p.accuracy(logits, y, id="accuracy"))
    p.set_optimizer("adam", lr=3e-3)
    p.set_loop(epochs=20, batch_size=64)
    return p.to_json()


def deep_chain(nodes: int, width: int = 32) -> dict[str, Any]:
    """A program of about `nodes` nodes: linear/ReLU pairs between an input and a loss (for benchmarks)."""
    p = Program(f"chain-{nodes}")
    h = p.input("x", [width])
    y = p.input("y", [], dtype="int32", role="labels")
    for _ in range(max(0, (nodes - 4) // 2)):
        h = p.relu(p.linear(h, width))
    logits = p.linear(h, 10)
    p.set_loss(p.cross_entropy(logits, y))
    p.set_loop(epochs=1, batch_size=32)
    return p.to_json()


def mlp(inputs: int, hidden: list[int], classes: int, batch: int) -> dict[str, Any]:
    """A plain ReLU MLP classifier (e.g. 784-512-512-10 for MNIST-sized data), Adam."""
    p = Program(f"mlp-{inputs}-{'-'.join(map(str, hidden))}-{classes}")
    h = p.input("x", [inputs])
    y = p.input("y", [], dtype="int32", role="labels")
    for width in hidden:
        h = p.relu(p.linear(h, width))
    logits = p.linear(h, classes)
    p.set_loss(p.cross_entropy(logits, y))
    p.add_metric(p.accuracy(logits, y))
    p.set_loop(epochs=1, batch_size=batch)
    return p.to_json()


def digits_cnn() -> dict[str, Any]:
    """The digits as 1x8x8 images: two conv / batch-norm / ReLU / max-pool blocks, dropout, Adam."""
    p = Program("digits-cnn")
    x = p.reshape(p.input("pixels", [64]), [1, 8, 8], id="image")
    y = p.input("digit", [], dtype="int32", role="labels")
    for i, channels in enumerate((16, 32), start=1):
        x = p.conv2d(x, channels, 3, padding=1, id=f"conv{i}")
        x = p.max_pool2d(p.relu(p.batch_norm(x, id=f"norm{i}")), 2, id=f"pool{i}")
    h = p.dropout(p.relu(p.linear(p.flatten(x), 64, id="hidden")), 0.25, id="drop")
    logits = p.linear(h, 10, id="logits")
    p.set_loss(p.cross_entropy(logits, y, id="loss"))
    p.add_metric(p.accuracy(logits, y, id="accuracy"))
    p.set_optimizer("adam", lr=3e-3)
    p.set_loop(epochs=20, batch_size=64)
    return p.to_json()


def char_transformer(
    vocab: int = 32, context: int = CHARS_CONTEXT, dim: int = 32, heads: int = 2, batch: int = 32
) -> dict[str, Any]:
    """The next character after `context` characters (the Zen of Python's alphabet has 32): token and
    learned positional embeddings, one pre-norm transformer block (multi-head self-attention over the
    window, a GELU MLP of 4 * dim, residuals), the last position's features to the logits; Adam."""
    if dim % heads:
        raise ValueError(f"heads={heads} must divide dim={dim}")
    width = dim // heads
    p = Program("char-transformer")
    tokens = p.input("context", [context], dtype="int32")
    y = p.input("next", [], dtype="int32", role="labels")
    x = p.add(p.embedding(tokens, vocab, dim, id="embed"), p.parameter([context, dim], id="position"), id="tokens")

    def split_heads(v: Ref, name: str) -> Ref:  # [context, dim] -> [heads, context, width]
        return p.permute(p.reshape(v, [context, heads, width], id=f"{name}_heads"), [1, 0, 2], id=f"{name}_split")

    h = p.layer_norm(x, id="norm1")
    q, k, v = (split_heads(p.linear(h, dim, id=name), name) for name in ("query", "key", "value"))
    scores = p.mul(p.matmul(q, p.permute(k, [0, 2, 1], id="key_t")), p.constant(1 / math.sqrt(width)), id="scores")
    attended = p.matmul(p.softmax(scores, -1, id="attention"), v, id="attended")
    merged = p.reshape(p.permute(attended, [1, 0, 2], id="merge"), [context, dim], id="merged")
    x = p.add(x, p.linear(merged, dim, id="project"), id="residual1")
    hidden = p.gelu(p.linear(p.layer_norm(x, id="norm2"), 4 * dim, id="expand"), id="gelu")
    x = p.add(x, p.linear(hidden, dim, id="contract"), id="residual2")
    last = p.reshape(p.slice(x, [context - 1, 0], [context, dim], id="last"), [dim], id="features")
    logits = p.linear(last, vocab, id="logits")
    p.set_loss(p.cross_entropy(logits, y, id="loss"))
    p.add_metric(p.accuracy(logits, y, id="accuracy"))
    p.set_optimizer("adam", lr=1e-3)
    p.set_loop(epochs=10, batch_size=batch)  # 856 characters of text: more epochs memorise it
    return p.to_json()


def random_draws(n: int, site: int = 3, position: int = 11) -> Function:
    """n uniform float32 draws of a `test` substream (its key is the input `rng.test`), one per element:
    the same bits on every device, which the tests compare by hash."""
    key = input_node("rng.test", Role.RNG, DType.U32, (2,))
    arg = RandomArg(Distribution.UNIFORM, "test", site, (n,))
    return Function("draws", (key,), (("u", make(Op.RANDOM, key, const(position, DType.U32), arg=arg)),))


# -- beyond training: a simulation and a statistical analysis on the same machinery ------------------------


def option_pricing(
    paths: int = 2**20,
    steps: int = 64,
    *,
    spot: float = 100.0,
    strike: float = 100.0,
    rate: float = 0.05,
    volatility: float = 0.2,
    years: float = 1.0,
) -> dict[str, Any]:
    """European and arithmetic-average Asian calls by Monte Carlo under geometric Brownian motion: `paths`
    replicas side by side, one time step per loop step (exact log-normal steps, normal draws from the `paths`
    substream), the running sum of prices carried for the Asian average. Results: each price and its
    standard error (the European one has the Black-Scholes price as a check)."""
    dt = years / steps
    p = Program("option-pricing")
    price = p.state([], value=spot, id="price")
    total = p.state([], value=0.0, id="price_sum")
    z = p.random([], distribution="normal", substream="paths", id="z")
    drift, diffusion = (rate - volatility**2 / 2) * dt, volatility * math.sqrt(dt)
    growth = p.exp(p.add(p.mul(z, p.constant(diffusion, id="diffusion")), p.constant(drift, id="drift")), id="growth")
    moved = p.update(price, p.mul(price, growth, id="moved"), id="next_price")
    p.update(total, p.add(total, moved, id="summed"), id="next_sum")
    discount = p.constant(math.exp(-rate * years), id="discount")
    strike_ = p.constant(strike, id="strike")
    european = p.mul(p.relu(p.sub(price, strike_, id="european_moneyness"), id="european_intrinsic"), discount,
                     id="european_payoff")  # fmt: skip
    average = p.mul(total, p.constant(1 / steps, id="per_step"), id="average")
    asian = p.mul(p.relu(p.sub(average, strike_, id="asian_moneyness"), id="asian_intrinsic"), discount,
                  id="asian_payoff")  # fmt: skip
    for name, payoff in (("european", european), ("asian", asian)):
        p.add_metric(p.mean(payoff, id=name))
        p.add_metric(p.std_error(payoff, id=f"{name}_se"))
    p.set_loop(epochs=1, steps=steps, batch_size=paths)
    return p.to_json()


def black_scholes_call(spot: float, strike: float, rate: float, volatility: float, years: float) -> float:
    """The analytic price of a European call (Black and Scholes 1973)."""
    d1 = (math.log(spot / strike) + (rate + volatility**2 / 2) * years) / (volatility * math.sqrt(years))
    d2 = d1 - volatility * math.sqrt(years)

    def cdf(v: float) -> float:
        return (1 + math.erf(v / math.sqrt(2))) / 2

    return spot * cdf(d1) - strike * math.exp(-rate * years) * cdf(d2)


ISING_CRITICAL = 2 / math.log(1 + math.sqrt(2))  # Onsager's critical temperature (J = 1, k_B = 1): 2.269...


def ising(
    temperature: float = 2.0, size: int = 32, chains: int = 64, *, sweeps: int = 100, epochs: int = 10
) -> dict[str, Any]:
    """The 2-D Ising model (J = 1, no field, periodic boundaries) by checkerboard Metropolis: `chains`
    lattices of size x size side by side, all spins up at the start; each loop step is one sweep, the
    black squares then the white ones, each site flipped with probability min(1, exp(-dE / T)) by one
    uniform draw of the `metropolis` substream. Results after each epoch of `sweeps` sweeps: the mean
    absolute magnetisation per site and the energy per site, over the chains, with standard errors."""
    if size % 2:
        raise ValueError(f"a periodic checkerboard needs an even lattice size, got {size}")
    p = Program("ising")
    spins = p.state([size, size], value=1.0, id="spins")
    u = p.random([size, size], substream="metropolis", id="u")
    beta2 = p.constant(-2 / temperature, id="minus_2_beta")
    one, zero, two = p.constant(1.0, id="one"), p.constant(0.0, id="zero"), p.constant(2.0, id="two")

    def neighbours(s: Ref, tag: str) -> Ref:
        up, down = p.roll(s, 1, axis=1, id=f"{tag}_up"), p.roll(s, -1, axis=1, id=f"{tag}_down")
        left, right = p.roll(s, 1, axis=2, id=f"{tag}_left"), p.roll(s, -1, axis=2, id=f"{tag}_right")
        return p.add(p.add(up, down, id=f"{tag}_vertical"), p.add(left, right, id=f"{tag}_horizontal"), id=f"{tag}_sum")

    def half_sweep(s: Ref, colour: int, tag: str) -> Ref:
        board = p.checkerboard([size, size], parity=colour, id=f"{tag}_squares")
        field = p.mul(s, neighbours(s, tag), id=f"{tag}_field")  # dE / 2 of flipping each spin
        chance = p.exp(p.mul(field, beta2, id=f"{tag}_log_chance"), id=f"{tag}_chance")
        accept = p.where(p.less(u, chance, id=f"{tag}_accepted"), one, zero, id=f"{tag}_accept")
        flip = p.mul(accept, board, id=f"{tag}_flip")
        return p.mul(s, p.sub(one, p.mul(two, flip, id=f"{tag}_twice"), id=f"{tag}_sign"), id=f"{tag}_spins")

    p.update(spins, half_sweep(half_sweep(spins, 0, "black"), 1, "white"), id="next_spins")
    magnetisation = p.abs(p.mean(spins, axes=[1, 2], id="mean_spin"), id="magnetisation")
    bonds = p.add(p.roll(spins, 1, axis=1, id="north"), p.roll(spins, 1, axis=2, id="west"), id="bonds")
    energy = p.neg(p.mean(p.mul(spins, bonds, id="bond_products"), axes=[1, 2], id="bond_mean"), id="energy")
    p.add_metric(p.mean(magnetisation, id="abs_magnetisation"))
    p.add_metric(p.std_error(magnetisation, id="abs_magnetisation_se"))
    p.add_metric(p.mean(energy, id="energy_per_site"))
    p.add_metric(p.std_error(energy, id="energy_per_site_se"))
    p.set_loop(epochs=epochs, steps=sweeps, batch_size=chains)
    return p.to_json()


def onsager_magnetisation(temperature: float) -> float:
    """The spontaneous magnetisation per site of the infinite 2-D Ising model (Onsager, Yang 1952)."""
    if temperature >= ISING_CRITICAL:
        return 0.0
    return (1 - math.sinh(2 / temperature) ** -4) ** 0.125


CANCER_COLUMNS = (("mean_radius", 0), ("mean_texture", 1), ("mean_smoothness", 4))  # features of the analysis


def logistic_bootstrap(resamples: int = 2000, iterations: int = 8, rows: int = 569) -> dict[str, Any]:
    """Logistic regression of the breast cancer diagnosis (1 benign) on three standardised features
    (CANCER_COLUMNS) and an intercept, fitted by Newton's method (IRLS): each loop step is one Newton step
    beta += (X'WX)^-1 X'(y - p) on all `rows` rows at once. Results: each coefficient and its standard
    error sqrt(diag((X'WX)^-1)); a percentile bootstrap 95 % interval for the mean radius coefficient,
    from `resamples` resamples of the rows drawn from the `bootstrap` substream, each refitted by the same
    Newton steps side by side; and the average of the mean radius feature (in its own units) with its
    bootstrap interval from the same resamples."""
    p = Program("logistic-bootstrap")
    x = p.input("features", [30])
    y = p.input("diagnosis", [], dtype="int32", role="labels")
    columns = [p.slice(x, [column], [column + 1], id=name) for name, column in CANCER_COLUMNS]
    chosen = p.concat(columns, axis=1, id="chosen")
    centre = p.mean(chosen, axes=[0], keepdims=True, id="centre")
    spread = p.sqrt(p.var(chosen, axes=[0], keepdims=True, id="variance"), id="spread")
    standard = p.div(p.sub(chosen, centre, id="centred"), spread, id="standardised")
    design = p.concat([p.constant(1.0, shape=[1], batched=True, id="intercept"), standard], axis=1, id="design")
    target = p.reshape(p.float(y, id="benign"), [1], id="target")
    k = len(CANCER_COLUMNS) + 1

    def newton(d: Ref, t: Ref, beta: Ref, tag: str) -> tuple[Ref, Ref]:
        """(X'WX, beta after one Newton step) for design d, targets t, coefficients beta."""
        chance = p.sigmoid(p.matmul(d, beta, id=f"{tag}_logit"), id=f"{tag}_chance")
        weight = p.mul(chance, p.sub(p.constant(1.0, id=f"{tag}_one"), chance, id=f"{tag}_rest"), id=f"{tag}_w")
        hessian = p.matmul(d, p.mul(d, weight, id=f"{tag}_weighted"), transpose_a=True, id=f"{tag}_information")
        score = p.matmul(d, p.sub(t, chance, id=f"{tag}_residual"), transpose_a=True, id=f"{tag}_score")
        stepped = p.add(beta, p.solve(hessian, score, id=f"{tag}_newton_step"), id=f"{tag}_stepped")
        return hessian, stepped

    beta = p.state([k, 1], batched=False, id="coefficients")
    information, stepped = newton(design, target, beta, "fit")
    p.update(beta, stepped, id="next_coefficients")
    radius = p.slice(x, [0], [1], id="radius")
    sample = p.concat([design, target, radius], axis=1, id="sample")
    resampled = p.bootstrap(sample, resamples=resamples, id="resampled")
    boot_design = p.slice(resampled, [0, 0], [rows, k], id="boot_design")
    boot_target = p.slice(resampled, [0, k], [rows, k + 1], id="boot_target")
    boot_radius = p.slice(resampled, [0, k + 1], [rows, k + 2], id="boot_radius")
    boot_beta = p.state([resamples, k, 1], batched=False, id="boot_coefficients")
    p.update(boot_beta, newton(boot_design, boot_target, boot_beta, "boot")[1], id="next_boot_coefficients")
    se = p.sqrt(p.diagonal(p.inverse(information, id="covariance"), id="variances"), id="standard_errors")
    for j, name in enumerate(["intercept", *(n for n, _ in CANCER_COLUMNS)]):
        p.add_metric(p.element(beta, [j, 0], id=f"coef_{name}"))
        p.add_metric(p.element(se, [j], id=f"coef_{name}_se"))
    radius_coefs = p.reshape(p.slice(boot_beta, [1, 0], [2, 1], id="boot_radius_coef"), [], id="boot_radius_coefs")
    radius_means = p.mean(boot_radius, axes=[1, 2], id="boot_radius_means")
    for name, values in (("coef_mean_radius", radius_coefs), ("average_radius", radius_means)):
        p.add_metric(p.quantile(values, 0.025, axis=0, id=f"{name}_ci_low"))
        p.add_metric(p.quantile(values, 0.975, axis=0, id=f"{name}_ci_high"))
    p.add_metric(p.mean(radius, id="average_radius"))
    p.set_loop(epochs=iterations, batch_size=rows, shuffle=False)
    return p.to_json()


def catalogue() -> dict[str, tuple[str, str, Any]]:
    """The examples by program name: (the data each reads, the first paragraph of its docstring on one
    line, its builder with the example's own sizes)."""
    entries = (
        (digits_mlp, "digits"),
        (digits_cnn, "digits"),
        (char_transformer, "chars"),
        (option_pricing, "none"),
        (ising, "none"),
        (logistic_bootstrap, "breast-cancer"),
    )
    out = {}
    for build, data in entries:
        summary = " ".join((build.__doc__ or "").split("\n\n")[0].split())
        out[build()["name"]] = (data, summary, build)
    return out
