package dev.outboxinbox.order;

import dev.outboxinbox.testing.DeclaredResponses;
import dev.outboxinbox.testing.FreshDatabaseResource;
import io.quarkus.test.common.ResourceArg;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.junit.jupiter.api.extension.ExtendWith;

/** A {@code @QuarkusTest} of order-service on its own fresh database and virtual host on the real servers. */
@QuarkusTest
@ExtendWith(DeclaredResponses.class)
@WithTestResource(value = FreshDatabaseResource.class, initArgs = {
        @ResourceArg(name = "database", value = "order_service_test"),
        @ResourceArg(name = "virtualHost", value = OrderServiceTest.VIRTUAL_HOST)})
@Target(ElementType.TYPE)
@Retention(RetentionPolicy.RUNTIME)
public @interface OrderServiceTest {

    String VIRTUAL_HOST = "order-test";
}
