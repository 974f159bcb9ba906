-- The text2sql rows' database (db_id "shop", Spider's layout: spider/database/shop/shop.sqlite); the tests build it.
CREATE TABLE items (name TEXT, price INTEGER);
INSERT INTO items VALUES ('pen', 1), ('book', 5), ('lamp', 9);
