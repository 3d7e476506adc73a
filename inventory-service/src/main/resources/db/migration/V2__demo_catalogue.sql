-- The demo catalogue. SKU-DURIAN is out of stock, to show a rejected order.
INSERT INTO products (sku, name, on_hand) VALUES
    ('SKU-APPLE',  'Apple',  1000),
    ('SKU-PEAR',   'Pear',    500),
    ('SKU-PLUM',   'Plum',    200),
    ('SKU-FIG',    'Fig',      50),
    ('SKU-DURIAN', 'Durian',    0);
