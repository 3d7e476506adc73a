// The live demo page: polls GET /demo/state every second and shows what changed. No build step, no
// library. Placing orders uses the public API (POST /orders); the fault controls belong to a separate
// process on this machine (deploy/local/demo) and appear only when it answers.
"use strict";

const POLL_MS = 1000;
const CONTROLS = new URLSearchParams(location.search).get("controls") || "http://127.0.0.1:8090";
const $ = (id) => document.getElementById(id);

let previous = null;
let controls = null;

function text(value, fallback = "–") {
    return value === undefined || value === null ? fallback : String(value);
}

function cell(row, value, className) {
    const td = document.createElement("td");
    td.textContent = text(value);
    if (className) {
        td.className = className;
    }
    row.appendChild(td);
    return td;
}

function logEvent(message, kind = "info") {
    const item = document.createElement("li");
    item.className = kind;
    item.textContent = new Date().toLocaleTimeString() + "  " + message;
    $("events").prepend(item);
    while ($("events").children.length > 40) {
        $("events").lastChild.remove();
    }
}

function bytes(value) {
    if (value === undefined || value === null) return "–";
    if (value < 0) return "no slot";
    if (value < 1024 * 1024) return (value / 1024).toFixed(0) + " kB";
    return (value / 1024 / 1024).toFixed(1) + " MB";
}

function sum(values) {
    return values.reduce((total, v) => total + (Number(v) || 0), 0);
}

// The flow's figures count alike: what happened since this page opened, at every hop. Each service's
// counters start at 0 with its process (a relay restarted reads 0 while the database still holds every
// order), so each figure adds up what its source gained between two looks, as Prometheus's increase()
// does: a reading below the last one means the process restarted, and counts whole.
const openedAt = new Date();
const gains = {};
function gained(name, reading) {
    const seen = gains[name];
    if (reading === null || reading === undefined) {
        return seen ? seen.total : null;
    }
    if (!seen) {
        gains[name] = {last: reading, total: 0};
        return 0;
    }
    seen.total += reading >= seen.last ? reading - seen.last : reading;
    seen.last = reading;
    return seen.total;
}

function render(state) {
    // Health of each service.
    const health = $("health");
    health.replaceChildren();
    Object.entries(state.health || {}).forEach(([service, status]) => {
        const item = document.createElement("li");
        item.className = status === "UP" ? "up" : "down";
        item.textContent = service + ": " + status;
        item.dataset.service = service;
        health.appendChild(item);
    });
    const problem = state.ordersProblem;
    $("problem").hidden = !problem;
    $("problem").textContent = problem || "";

    // The flow, hop by hop.
    const inventory = (state.inboxes || {})["inventory-service"] || {};
    const orderInbox = (state.inboxes || {})["order-service"] || {};
    const relays = state.relays || {};
    const counts = (state.orders || {}).counts || {};
    $("flow-since").textContent = openedAt.toLocaleTimeString();
    $("fig-placed").textContent = text(gained("placed", state.orders ? sum(Object.values(counts)) : null));
    $("fig-published").textContent = text(gained("published", (relays["outbox-relay"] || {}).published));
    $("fig-applied").textContent = text(gained("applied", inventory.applied));
    $("fig-replies").textContent = text(gained("replies", orderInbox.applied));
    const duplicates = (gained("inventory duplicates", inventory.duplicate) || 0)
        + (gained("order duplicates", orderInbox.duplicate) || 0);
    $("fig-duplicates").textContent = String(duplicates);

    const relayRows = $("relays");
    relayRows.replaceChildren();
    Object.entries(relays).forEach(([name, relay]) => {
        const row = document.createElement("tr");
        cell(row, name);
        cell(row, relay.published);
        cell(row, bytes(relay.retainedWalBytes));
        cell(row, relay.oldestUnpublishedSeconds === undefined ? null : relay.oldestUnpublishedSeconds.toFixed(1) + " s");
        relayRows.appendChild(row);
    });
    const latency = $("latency");
    latency.replaceChildren();
    Object.entries(state.inboxes || {}).forEach(([name, inbox]) => {
        const row = document.createElement("tr");
        cell(row, name);
        ["p50Ms", "p95Ms", "p99Ms"].forEach((p) => cell(row, inbox[p] === undefined ? null : inbox[p] + " ms"));
        latency.appendChild(row);
    });

    // Orders.
    $("order-counts").textContent = Object.entries(counts).map(([s, n]) => n + " " + s.toLowerCase()).join(", ");
    const orderRows = $("order-rows");
    orderRows.replaceChildren();
    ((state.orders || {}).newest || []).forEach((order) => {
        const row = document.createElement("tr");
        row.dataset.order = order.id;
        cell(row, order.id.substring(0, 8), "mono");
        cell(row, order.lines.map((l) => l.quantity + " × " + l.sku).join(", "));
        cell(row, new Date(order.placedAt).toLocaleTimeString());
        cell(row, order.status, "status " + order.status.toLowerCase());
        cell(row, order.statusReason || "");
        const action = document.createElement("td");
        if (order.status === "PENDING" || order.status === "CONFIRMED") {
            const button = document.createElement("button");
            button.type = "button";
            button.textContent = "Cancel";
            button.addEventListener("click", () => cancelOrder(order.id));
            action.appendChild(button);
        }
        row.appendChild(action);
        orderRows.appendChild(row);
    });

    // Stock.
    const stock = Array.isArray(state.stock) ? state.stock : [];
    const before = new Map(((previous || {}).stock || []).map((p) => [p.sku, p]));
    const stockRows = $("stock-rows");
    stockRows.replaceChildren();
    stock.forEach((product) => {
        const row = document.createElement("tr");
        row.dataset.sku = product.sku;
        cell(row, product.sku, "mono");
        cell(row, product.onHand);
        const changed = before.has(product.sku) && before.get(product.sku).reserved !== product.reserved;
        cell(row, product.reserved, changed ? "changed" : "");
        cell(row, product.available, changed ? "changed" : "");
        stockRows.appendChild(row);
    });
    const select = $("sku");
    if (select.options.length === 0 && stock.length > 0) {
        stock.forEach((product) => select.add(new Option(product.sku + " (" + product.available + " available)", product.sku)));
    } else {
        stock.forEach((product, i) => {
            if (select.options[i] && select.options[i].value === product.sku) {
                select.options[i].text = product.sku + " (" + product.available + " available)";
            }
        });
    }

    // Dead letters, newest first, from both inboxes.
    const letters = [];
    const depths = [];
    Object.entries(state.deadLetters || {}).forEach(([service, summary]) => {
        if (!summary) return;
        if (summary.depth !== undefined) depths.push(summary.queue + ": " + summary.depth + " waiting");
        (summary.recent || []).forEach((letter) => letters.push({service, ...letter}));
    });
    letters.sort((a, b) => String(b.at).localeCompare(String(a.at)));
    const list = $("dead-letter-list");
    list.replaceChildren();
    const depthItem = document.createElement("li");
    depthItem.className = "note";
    depthItem.textContent = depths.join("; ") || "dead-letter queues unreadable";
    list.appendChild(depthItem);
    letters.forEach((letter) => {
        const item = document.createElement("li");
        item.className = "dead-letter";
        item.dataset.messageId = letter.messageId;
        item.textContent = letter.service + " dead-lettered " + letter.messageId + ": " + letter.reason;
        list.appendChild(item);
    });

    describeChanges(state, duplicates, letters);
    previous = state;
    previous.duplicates = duplicates;
    previous.letterIds = new Set(letters.map((l) => l.messageId));
}

function describeChanges(state, duplicates, letters) {
    if (!previous) {
        logEvent("watching the pipeline");
        return;
    }
    const was = new Map((((previous.orders || {}).newest) || []).map((o) => [o.id, o.status]));
    (((state.orders || {}).newest) || []).forEach((order) => {
        if (was.get(order.id) === "CANCELLING" && order.status === "CANCELLED") {
            logEvent("order " + order.id.substring(0, 8) + " CANCELLED: inventory released what it held", "good");
        }
        if (was.get(order.id) === "PENDING" && order.status !== "PENDING" && order.status !== "CANCELLING") {
            logEvent("order " + order.id.substring(0, 8) + " " + order.status
                + (order.statusReason ? " (" + order.statusReason + ")" : "") + ": inventory's reply came back", "good");
        }
    });
    if (duplicates > previous.duplicates) {
        logEvent((duplicates - previous.duplicates) + " duplicate absorbed: delivered again, recognised by the inbox, no effect", "good");
    }
    letters.filter((l) => !previous.letterIds.has(l.messageId))
        .forEach((l) => logEvent("dead-lettered " + l.messageId + ": " + l.reason, "bad"));
    Object.entries(state.health || {}).forEach(([service, status]) => {
        const before = (previous.health || {})[service];
        if (before && before !== status) {
            logEvent(service + " is " + status, status === "UP" ? "good" : "bad");
        }
    });
}

async function poll() {
    try {
        const response = await fetch("/demo/state", {cache: "no-store"});
        if (!response.ok) throw new Error("GET /demo/state answered " + response.status);
        render(await response.json());
    } catch (e) {
        $("problem").hidden = false;
        $("problem").textContent = "order-service does not answer (" + e.message + "); retrying";
    } finally {
        setTimeout(poll, POLL_MS);
    }
}

function uuid() {
    return crypto.randomUUID ? crypto.randomUUID()
        : "xxxxxxxx-xxxx-4xxx-8xxx-xxxxxxxxxxxx".replace(/x/g, () => (Math.random() * 16 | 0).toString(16));
}

async function placeOrder(sku, quantity) {
    const response = await fetch("/orders", {
        method: "POST",
        headers: {"Content-Type": "application/json", "Idempotency-Key": "demo-" + uuid()},
        body: JSON.stringify({customerId: "demo", lines: [{sku, quantity}]}),
    });
    const body = await response.json();
    if (!response.ok) {
        throw new Error(body.detail || body.title || ("HTTP " + response.status));
    }
    return body;
}

/** POST /orders/{id}/cancel: 202 CANCELLING until inventory releases, 409 for a rejected order. */
async function cancelOrder(id) {
    const response = await fetch("/orders/" + id + "/cancel", {method: "POST"});
    const body = await response.json();
    if (!response.ok) {
        logEvent("order " + id.substring(0, 8) + " not cancelled: " + (body.detail || body.title), "bad");
        return;
    }
    logEvent("order " + id.substring(0, 8) + " " + body.status + ": OrderCancelled is in the outbox");
}

$("order-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const sku = $("sku").value;
    const quantity = Number($("quantity").value);
    try {
        const order = await placeOrder(sku, quantity);
        $("placed").textContent = "Order " + order.id.substring(0, 8) + " placed: " + order.status
            + ". Its event is in the outbox; watch it below.";
        logEvent("order " + order.id.substring(0, 8) + " placed (" + quantity + " × " + sku + "), PENDING");
    } catch (e) {
        $("placed").textContent = "Not placed: " + e.message;
    }
});

$("place-burst").addEventListener("click", async () => {
    const skus = Array.from($("sku").options).map((o) => o.value);
    const placed = await Promise.allSettled(Array.from({length: 20},
        () => placeOrder(skus[Math.floor(Math.random() * skus.length)], 1 + Math.floor(Math.random() * 3))));
    const ok = placed.filter((p) => p.status === "fulfilled").length;
    $("placed").textContent = ok + " of 20 orders placed.";
    logEvent("burst: " + ok + " orders placed");
});

async function control(action, label) {
    $("control-result").textContent = label + "…";
    try {
        const response = await fetch(CONTROLS + "/" + action, {method: "POST"});
        const body = await response.json();
        if (!response.ok) throw new Error(body.error || ("HTTP " + response.status));
        $("control-result").textContent = body.done;
        logEvent(body.done, "fault");
    } catch (e) {
        $("control-result").textContent = label + " failed: " + e.message;
    }
}

async function findControls() {
    try {
        const response = await fetch(CONTROLS + "/controls", {cache: "no-store"});
        controls = (await response.json()).controls || [];
    } catch (e) {
        controls = [];
    }
    $("controls-on").hidden = controls.length === 0;
    $("controls-off").hidden = controls.length > 0;
    $("restart-broker").hidden = !controls.includes("restart-broker");
}

$("republish").addEventListener("click", () => control("republish", "Republishing the newest event"));
$("poison").addEventListener("click", () => control("poison", "Sending a poison message"));
$("restart-broker").addEventListener("click", () => control("restart-broker", "Restarting the broker"));

findControls();
poll();
