package dev.outboxinbox.inventory;

import dev.outboxinbox.testing.DeclaredResponses;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.junit.jupiter.api.extension.ExtendWith;

/** A {@code @QuarkusTest} of inventory-service on a fresh database and virtual host of the real servers. */
@QuarkusTest
@ExtendWith(DeclaredResponses.class)
@WithTestResource(InventoryTestResource.class)
@Target(ElementType.TYPE)
@Retention(RetentionPolicy.RUNTIME)
public @interface InventoryServiceTest {
}
