package dev.outboxinbox.inventory;

import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/** A {@code @QuarkusTest} of inventory-service on a fresh database and virtual host of the real servers. */
@QuarkusTest
@WithTestResource(InventoryTestResource.class)
@Target(ElementType.TYPE)
@Retention(RetentionPolicy.RUNTIME)
public @interface InventoryServiceTest {
}
