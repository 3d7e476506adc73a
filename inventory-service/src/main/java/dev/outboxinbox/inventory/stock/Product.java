package dev.outboxinbox.inventory.stock;

import io.quarkus.hibernate.orm.panache.PanacheEntityBase;
import jakarta.persistence.Column;
import jakarta.persistence.Entity;
import jakarta.persistence.Id;
import jakarta.persistence.Table;

@Entity
@Table(name = "products")
public class Product extends PanacheEntityBase {

    @Id
    public String sku;

    @Column(nullable = false)
    public String name;

    @Column(name = "on_hand", nullable = false)
    public int onHand;

    @Column(nullable = false)
    public int reserved;
}
